"""The transports' threads: reading client messages and writing answers.

`mcp_connection.py` is the MCP layer every transport shares (it takes messages and
gives answers), its requests in `tool_methods.py`, `resource_methods.py` and
`log_methods.py`; `stdio.py` is the stdio transport over it; `protocol.py` the
JSON-RPC shapes."""
