"""The tool registry: every tool from every area module; read-only after import.

`Browser.tools` narrows this to the tools a configuration enables.
"""

from mcpbrowser.tools import capture, content, interaction, monitoring, navigation, sessions

ALL = [*sessions.TOOLS, *navigation.TOOLS, *interaction.TOOLS, *capture.TOOLS, *monitoring.TOOLS,
       *content.TOOLS]
