"""The session tools, one module per area; their handlers run on a session's thread (`base.SessionTool`).

The registry of every tool, the core's own included, is `core/tool_registry.py`."""
