import sys

from engine.kube.cli import main

sys.exit(main())
