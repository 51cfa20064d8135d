"""``python -m ingest.cli``: the ``tracescore`` command."""

import sys

from ingest.cli import main

sys.exit(main())
