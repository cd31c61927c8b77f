"""The MCP method table: each method's handler, its protocol eras, and what it adds to the advertised
capabilities. Built by each connection when it is made; read by the transport's reader thread."""

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcpbrowser.transports import protocol
from mcpbrowser.transports.mcp_caller import McpCaller

HANDSHAKE = "handshake"  # 2024-11-05 .. 2025-11-25: initialize fixes the version
MODERN = "modern"        # 2026-07-28: each request carries its version
BOTH = (HANDSHAKE, MODERN)

# A request's handler: (msg, caller) -> its result, or None when it answers later.
Handler = Callable[[protocol.Message, McpCaller], dict[str, Any] | None]
# A capability contribution: a fixed dict, or a function of the protocol version (None: nothing then).
Contribution = dict[str, Any] | Callable[[str], dict[str, Any] | None] | None


def era(version: str) -> str:
    return MODERN if version in protocol.MODERN_VERSIONS else HANDSHAKE


@dataclass(frozen=True)
class Method:
    name: str
    handler: Handler
    eras: tuple[str, ...] = BOTH
    capability: Contribution = None


class MethodTable:
    """The requests a connection answers, by name."""

    def __init__(self) -> None:
        self._methods: dict[str, Method] = {}

    def add(self, name: str, handler: Handler, *,
            eras: tuple[str, ...] = BOTH, capability: Contribution = None) -> None:
        if name in self._methods:
            raise ValueError(f"{name} is registered twice")
        self._methods[name] = Method(name, handler, eras, capability)

    def find(self, name: str, version: str) -> Method | None:
        """The method a request of this version names, or None (unknown, or not of its era)."""
        method = self._methods.get(name)
        return method if method is not None and era(version) in method.eras else None

    def capabilities(self, version: str) -> dict[str, Any]:
        """What the server advertises to a client of this version: every contribution, merged."""
        out: dict[str, Any] = {}
        for method in self._methods.values():
            if era(version) in method.eras:
                given = method.capability(version) if callable(method.capability) else method.capability
                _merge(out, given or {})
        return out


def _merge(into: dict[str, Any], more: dict[str, Any]) -> None:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)  # the table's constants stay as they are
