"""`python -m worker.lab up|down|status`."""

import sys

from worker.lab.cli import main

sys.exit(main())
