"""The live pictures the view serves: one screencast per watched session, whatever the number of its viewers.

ANY THREAD (the view's request threads). The first viewer of a session starts its picture through the
core's face (`CoreFace.watch`: the person's `person_watch` call, logged and recorded as theirs); the last
one ends it (`Cast.end`), and the session thread stops it at its next tick (session/screencast.py).
"""

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpbrowser.core.face import CoreFace, Picture


class Screencasts:
    """The sessions' casts the view's viewers watch, counted."""

    def __init__(self, core: "CoreFace") -> None:
        self.core = core
        self._lock = threading.Lock()
        self._casts: dict[str, tuple[Picture, int]] = {}  # session id -> (its cast, its viewers)

    def watch(self, session_id: str, person: str) -> "Picture | None":
        """One more viewer of an open session: its cast (started by the first); None when it is not open."""
        with self._lock:
            cast, viewers = self._casts.get(session_id, (None, 0))
            if cast is None or cast.ended:
                cast, viewers = self.core.watch(session_id, person), 0
                if cast is None:
                    return None
            self._casts[session_id] = (cast, viewers + 1)
        return cast

    def leave(self, cast: "Picture") -> None:
        """A viewer left; the last one ends the screencast."""
        with self._lock:
            held, viewers = self._casts.get(cast.session_id, (None, 0))
            if held is not cast:
                return
            if viewers > 1:
                self._casts[cast.session_id] = (cast, viewers - 1)
                return
            del self._casts[cast.session_id]
        cast.end()

    def viewers(self, session_id: str) -> dict[str, int]:
        """{viewers, starts}: its viewers now, and Page.startScreencast sent for the picture they watch."""
        with self._lock:
            cast, viewers = self._casts.get(session_id, (None, 0))
        return {"viewers": viewers, "starts": 0 if cast is None else cast.starts}
