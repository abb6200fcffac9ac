"""``python -m ccarena`` runs the command line."""

from ccarena.cli import main

main()
