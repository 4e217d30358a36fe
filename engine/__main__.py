import sys

from engine.runs.cli import main

sys.exit(main())
