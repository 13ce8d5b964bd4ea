"""``python -m srh_core`` runs the ``srh`` command line."""

from srh_core.cli.signals import console_main

console_main()
