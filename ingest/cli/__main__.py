"""``python -m tracescore.ingest.cli``: the ``tracescore`` command."""

import sys

from tracescore.ingest.cli import main

sys.exit(main())
