import sys

from rnnfix.ci.bot import main

sys.exit(main())
