"""``python -m kryt`` runs the command line."""

import sys

from kryt.cli import main

sys.exit(main())
