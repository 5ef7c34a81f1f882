"""``python -m queue_pipeline``: the queue-pipeline command line."""

import sys

from queue_pipeline.cli import main

sys.exit(main())
