"""`python -m eval ...`: see eval.cli."""

import sys

from .cli import main

sys.exit(main())
