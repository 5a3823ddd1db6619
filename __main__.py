"""``python -m econarena``: the command line, as the ``econarena`` script runs it."""

import sys

from .cli import main

sys.exit(main())
