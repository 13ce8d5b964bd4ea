"""``python -m srh_workers.cli worker|metrics ...``: the worker commands without the plugin."""

import sys

from srh_workers.cli.worker import main

sys.exit(main())
