from rnnfix.cli.app import main

main()
