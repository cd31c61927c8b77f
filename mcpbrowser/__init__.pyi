"""For type checkers and IDEs, which cannot follow __init__.py's lazy __getattr__ (to them
`mcpbrowser.Browser` would be Any: no misspelt parameter caught, no docstring shown). A stub, not
imports in __init__.py: the package's face imports nothing it serves (no arrow running back up)."""

from mcpbrowser.config import Config as Config
from mcpbrowser.config import ConfigError as ConfigError
from mcpbrowser.core.browser import Browser as Browser
from mcpbrowser.errors import *  # noqa: F403
from mcpbrowser.library import Session as Session

__version__: str
