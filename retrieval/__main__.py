"""`python -m retrieval ...`: see retrieval.cli."""

import sys

from retrieval.traces.command_helper import prestart

prestart(sys.argv[1:])  # a traced lookup's helper loads DuckDB while this process imports the rest

from retrieval.cli import main  # noqa: E402

sys.exit(main())
