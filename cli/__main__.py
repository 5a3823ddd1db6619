"""``python -m econarena.cli``: the command line, as the ``econarena`` script runs it."""

import sys

from . import main

sys.exit(main())
