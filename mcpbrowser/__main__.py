"""`python -m mcpbrowser`: same as the `mcpbrowser` command; runs on the main thread."""

import sys

from mcpbrowser.cli import main

sys.exit(main())
