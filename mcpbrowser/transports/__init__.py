"""The transports' threads: reading client messages and writing answers.

`mcp_connection.py` is the MCP layer every transport shares, its requests in `tool_methods.py`,
`resource_methods.py` and `log_methods.py`; `stdio.py` and `http.py` are the transports over it."""
