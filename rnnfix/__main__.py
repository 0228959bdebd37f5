from rnnfix.cli import main

main()
