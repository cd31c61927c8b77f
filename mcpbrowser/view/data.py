"""What the view shows, read through the core: the sessions, a session's calls (the history), its logs (the hub).

ANY THREAD (the view's request threads). Nothing here touches Playwright: the list asks
each session thread for its page as list_sessions does, the logs come from the resources
hub, the calls from the history's rows (recorded with their secrets scrubbed).
"""

from typing import Any

from mcpbrowser.core.face import CoreFace
from mcpbrowser.resources.hub import ResourceNotFound
from mcpbrowser.view.auth import Viewer

LOGS = ("console", "network")


class Looking:
    """The core as a person may see it: every answer is cut to the sessions the viewer may see."""

    def __init__(self, core: CoreFace) -> None:
        self.core = core

    def may_see(self, viewer: Viewer, session_id: str) -> bool:
        """Whether the session (open or ended) is the viewer's to see; an unknown id is no one's."""
        return viewer.may_see(self.core.owner_of(session_id))

    def sessions(self, viewer: Viewer) -> list[dict[str, Any]]:
        """The open sessions the viewer may see, each with its state, throttling, memory and last call."""
        return [{**session, **self.state(session["sessionId"])} for session in self.core.sessions(viewer.owner)]

    def state(self, session_id: str) -> dict[str, Any]:
        """{state, waitingFor?, cooldownMs?, lastCall?} of an open session (closed: {state: closed})."""
        session = self.core.session(session_id)
        if session is None:
            return {"state": "closed"}
        out: dict[str, Any] = {"state": "idle", "heldBy": session["heldBy"]}
        if session["running"]:
            out["state"] = "working"
        elif session["crashed"]:
            out["state"] = "crashed"  # until the agent's next call, which answers PAGE_CRASHED and opens a fresh page
        calls = self.core.timeline(session_id, newest=True)
        if calls:
            last = calls[-1]
            out["lastCall"] = {key: last[key] for key in ("tool", "at", "error", "status")}
            if session["running"] == "wait_for_user" and last["tool"] == "wait_for_user":
                out.update(state="waiting for a person", waitingFor=str(last["params"].get("message", "")))
        if session["cooldownS"] > 0:
            out.update(state="cooldown", cooldownMs=round(session["cooldownS"] * 1000),
                       cooldownMessage=session["cooldownMessage"])
        return out

    def timeline(self, session_id: str, after: int) -> list[dict[str, Any]]:
        """The session's calls after `after` (a row's seq), with each call's duration."""
        rows = self.core.timeline(session_id, after)
        for row in rows:
            row["durationMs"] = None if row["endedAt"] is None else row["endedAt"] - row["at"]
        return rows

    def page(self, viewer: Viewer, ref_id: str) -> str | None:
        """The page snapshot a call stored, if the viewer may see its session; else None."""
        found = self.core.stored_page(ref_id)
        if found is None or found[1] is None or found[0] is None or not self.may_see(viewer, found[0]):
            return None
        page = found[1]
        return page.decode("utf-8", "replace") if isinstance(page, bytes) else str(page)

    def logs(self, viewer: Viewer, session_id: str, name: str, after: int) -> dict[str, Any] | None:
        """A log resource's entries after `after` (redacted as the resource is), or None (gone, not theirs)."""
        if name not in LOGS:
            return None
        uri = f"mcpbrowser://sessions/{session_id}/{name}?after={after}"
        try:
            return self.core.resources.read(uri, viewer.owner).result(10)
        except (ResourceNotFound, TimeoutError):
            return None
