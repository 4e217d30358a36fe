import os
import sys

from engine.runs.cli import main

try:
    sys.exit(main())
except BrokenPipeError:  # the output went to a pager or `head` that closed early: not an error of ours
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(0)
