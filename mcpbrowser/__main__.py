"""`python -m mcpbrowser`: same as the `mcpbrowser` command."""

import sys

from mcpbrowser.cli import main

sys.exit(main())
