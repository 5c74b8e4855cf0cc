"""``python -m tools.match``: play a match (the command line is in ``tools.match.match``)."""

import sys

from tools.match.match import main

sys.exit(main())
