"""The tool registry: every tool from every area module, by name; read-only after import."""

from mcpbrowser.tools import interaction, navigation, sessions

ALL = [*sessions.TOOLS, *navigation.TOOLS, *interaction.TOOLS]
BY_NAME = {tool.name: tool for tool in ALL}
