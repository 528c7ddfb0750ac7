"""`python -m retrieval ...`: see retrieval.cli."""

import sys

from .cli import main

sys.exit(main())
