"""Emulation tools that act on a running session (throttling); handlers run on the session thread."""

from mcpbrowser.session import throttling
from mcpbrowser.tools.base import SessionTool, result_schema, session_schema


def throttle(state, args, response):
    settings = throttling.settings(args, state.throttle)
    throttling.change(state, settings)
    response.answer({"throttle": settings,
                     "message": "Throttling ended." if not settings else "Applied to every tab of the session, "
                                "new ones too, until changed (network none, cpuRate 1 end it)."})


TOOLS = [
    SessionTool(
        name="throttle", group="emulation", title="Throttle CPU and network",
        description="Slow the session's pages down as Chrome DevTools does: CPU rate, network preset or "
                    "figures, offline. Chromium only.",
        input_schema=session_schema(throttling.SCHEMA),
        handler=throttle, idempotent=True, output_schema=result_schema(throttle="object", message="string"),
    ),
]
