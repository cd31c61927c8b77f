"""MCP resources: each declared once (base.SessionResource), the session logs in session_logs.py.

The core's ResourceHub (hub.py) lists, reads and watches them; the MCP layer serves them
(transports/resource_methods.py) to every transport alike. Declarations only: any thread reads them.
"""

from mcpbrowser.resources.session_logs import RESOURCES

__all__ = ["RESOURCES"]
