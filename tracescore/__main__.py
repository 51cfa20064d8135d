"""``python -m tracescore``: the ``tracescore`` command."""

import sys

from tracescore.ingest.cli import main

sys.exit(main())
