"""``python -m infomark`` runs the CLI."""

import sys

from infomark.cli.entry import main

sys.exit(main())
