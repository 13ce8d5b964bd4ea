"""``python -m srh_core`` runs the ``srh`` command line."""

import sys

from srh_core.cli import main

sys.exit(main())
