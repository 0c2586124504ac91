"""``python -m mslink ARGS`` runs the mslink command line."""

import sys

from ._cli import main

sys.exit(main(["mslink", *sys.argv[1:]]))
