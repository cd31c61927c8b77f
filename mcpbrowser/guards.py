"""The checks a call passes: rate limits, the circuit breaker, the login cooldown, the memory guard.

Pure logic with an injectable clock (`time.monotonic`, never wall time for deadlines) and a lock each, so
any thread may call them: the core's dispatcher, the HTTP transport's rate limits, timer threads (cooldown end)."""

import collections
import math
import os
import threading
import time

from mcpbrowser.errors import ResourceExhausted
from mcpbrowser.process_tree import browser_pss_kb
from mcpbrowser.timers import KeyedTimers

# -- rate limits -----------------------------------------------------------------------------


class RateLimiter:
    """At most `per_minute` calls per key in any sliding 60 s window; 0 turns it off."""

    WINDOW_S = 60.0

    def __init__(self, per_minute, clock=time.monotonic):
        self.per_minute, self.clock = per_minute, clock
        self._calls = collections.defaultdict(collections.deque)
        self._lock = threading.Lock()

    def check(self, key):
        """None when the call may go ahead (and is counted), else milliseconds until it may."""
        if not self.per_minute:
            return None
        now = self.clock()
        with self._lock:
            calls = self._calls[key]
            while calls and calls[0] <= now - self.WINDOW_S:
                calls.popleft()
            if len(calls) >= self.per_minute:
                return max(1, math.ceil((calls[0] + self.WINDOW_S - now) * 1000))
            calls.append(now)
            return None


class CircuitBreaker:
    """Per operation: after `threshold` BROWSER_ERROR failures in a row (0: never), refuse it for `reset_s`.

    Then the next call is a trial: a success closes the breaker, a failure opens it again at once. Other
    outcomes (the agent's own mistakes, such as ELEMENT_NOT_FOUND) neither count nor reset."""

    def __init__(self, threshold, reset_s, clock=time.monotonic):
        self.threshold, self.reset_s, self.clock = threshold, reset_s, clock
        self._failures: collections.Counter[str] = collections.Counter()
        self._opened = {}  # key -> monotonic time the breaker last opened
        self._lock = threading.Lock()

    def check(self, key):
        """None when the call may go ahead, else milliseconds until the trial call may."""
        if not self.threshold:
            return None
        with self._lock:
            opened = self._opened.get(key)
            if opened is None:
                return None
            left = opened + self.reset_s - self.clock()
            return max(1, math.ceil(left * 1000)) if left > 0 else None

    def failed(self, key):
        """Count a BROWSER_ERROR; True when this failure opened (or re-opened) the breaker."""
        if not self.threshold:
            return False
        with self._lock:
            self._failures[key] += 1
            if self._failures[key] >= self.threshold:
                self._opened[key] = self.clock()
                return True
            return False

    def succeeded(self, key):
        with self._lock:
            self._failures.pop(key, None)
            self._opened.pop(key, None)


# -- the login cooldown --------------------------------------------------------------------
# It exists so that an agent stops pressing against a login, verification or captcha wall
# while its person is away. THE RULE for what starts it (docs/safety.md says the same) uses two
# facts about the failure, its code and whether the call's own timeout ran out (`timed_out`),
# and one about the situation, what the page shows at that moment (session/page_reading.wall):
# never the words of a message, which we write for people and reword.
#  1. wait_for_user's own timeout ran out (WAIT_TIMEOUT, timed_out): the person did not
#     finish. A person who declined the handover is there and answered: no cooldown.
#  2. A wait's timeout ran out (WAIT_TIMEOUT: wait_for) or a page load's (NAVIGATION_FAILED
#     with timed_out: navigate, go_back, go_forward, reload) while the page shows a wall.
#  3. Nothing else. An action (click, type, fill_form, ...) answers a code for the agent's
#     own mistake: ELEMENT_NOT_FOUND (a missing selector, a field not rendered yet),
#     ELEMENT_NOT_CLICKABLE / ELEMENT_NOT_EDITABLE (hidden, disabled, covered),
#     INVALID_PARAMETERS (a bad selector, a stale ref), DIALOG_OPEN; it sent nothing to the
#     site, so retrying it hammers no wall, and the agent needs its error, not a pause.
#     The wait or load the agent does next on a real wall trips it. COMMAND_TIMEOUT is our
#     own stuck thread, a network error is the network: neither is a wall.
# A wait that gave up on a page that shows no wall (a login form still rendering, say) does
# not count either: the agent waited too little, and the next wait on the wall will.

HANDOVER = "handover"  # the wall of rule 1: the person, not the page


def wall_hit(tool, error, page_wall):
    """The wall this failure of `tool` ran into under the rule above, or None.

    error: its BrowserServerError (only `code` and `timed_out` are read). page_wall():
    what wall the page shows now (a kind, see page_reading.wall) or None; asked only
    when the rule needs it, since it reads the page."""
    if error.code not in ("WAIT_TIMEOUT", "NAVIGATION_FAILED") or not error.timed_out:
        return None
    if tool == "wait_for_user":
        return HANDOVER if error.code == "WAIT_TIMEOUT" else None
    return page_wall()


MESSAGES = {
    "en": {
        "timeout": "{why}. To stop retrying against this wall while nobody is there, {whom} pause for "
                   "{left}; reading the page still works (snapshot, screenshot, logs, get_content). Ask the "
                   "user to finish the login or verification in the browser window, then call wait_for_user{note}: "
                   "once it sees them done, the pause ends.",
        "cooldown": "Paused after {why}: {left} left for {whom}. Reading the page still works (snapshot, "
                    "screenshot, logs, get_content). Ask the user to finish the login or verification in the "
                    "browser window, then call wait_for_user ({note}the pause ends once it sees them done), or try "
                    "again after the pause.",
        # To a client already told the above in this cooldown (its wall's LOGIN_TIMEOUT, a refusal).
        "again": "Still paused after {why}: {left} left for {whom}. Ask the user to finish the login or "
                 "verification, then call wait_for_user{note}; reading the page works.",
        # Said only to a client for which wait_for_user is off (ToolGroups.off_note).
        "off_timeout": " (in the logins tool group: enable_tools turns it on)",
        "off_cooldown": "in the logins tool group: enable_tools turns it on; ",
        "left": "{m} min {s} s",
        "ended": "The login cooldown ended; browser actions proceed again.",
        "finished": "The user finished the login or verification; the login cooldown ended.",
        "elsewhere": "another client's call ran into a login or verification wall",
        "server": "browser actions on this server", "client": "your browser actions",
        "session": "browser actions in session {session}",
        "why": "{tool} timed out on a page that shows {wall}", "page": " ({page})",
        HANDOVER: "wait_for_user timed out: the user did not finish",
        "password": "a password field", "one-time-code": "a one-time-code field", "captcha": "a captcha",
        "title": "a login or verification title",
    },
    "zh": {
        "timeout": "{why}。为避免在无人值守时反复冲击该页面，{whom}将暂停 {left}；读取页面仍可进行"
                   "（snapshot、screenshot、日志、get_content）。请让用户在浏览器窗口中完成登录或验证，"
                   "然后调用 wait_for_user{note}：确认用户完成后，暂停即结束。",
        "cooldown": "暂停原因：{why}。{whom}还剩 {left}。读取页面仍可进行（snapshot、screenshot、日志、"
                    "get_content）。请让用户在浏览器窗口中完成登录或验证，然后调用 wait_for_user"
                    "（{note}确认用户完成后暂停即结束），或在暂停结束后再试。",
        "again": "仍在暂停（原因：{why}）：{whom}还剩 {left}。请让用户完成登录或验证，然后调用 wait_for_user{note}；"
                 "读取页面仍可进行。",
        "off_timeout": "（属于 logins 工具组，可用 enable_tools 开启）",
        "off_cooldown": "属于 logins 工具组，可用 enable_tools 开启；",
        "left": "{m} 分 {s} 秒",
        "ended": "登录冷却已结束，浏览器操作恢复。",
        "finished": "用户已完成登录或验证，登录冷却已结束。",
        "elsewhere": "另一个客户端的调用遇到了登录或验证页面",
        "server": "本服务器上的浏览器操作", "client": "你的浏览器操作", "session": "会话 {session} 中的浏览器操作",
        "why": "{tool} 在显示{wall}的页面上超时", "page": "（{page}）",
        HANDOVER: "wait_for_user 超时：用户未完成",
        "password": "密码输入框", "one-time-code": "一次性验证码输入框", "captcha": "验证码（captcha）",
        "title": "登录或验证标题",
    },
}


class Cooldown:
    """Pauses browser actions for `duration_s` after a call ran into a login wall (the rule above).

    Scope, what one cooldown covers: "client" (the default), the calls of the client whose
    call tripped it, or all calls when the server has one client (stdio, the library: no
    owner); "server", every call; "session", the calls on that session. Only tools that
    read (their `read_only` declaration) and wait_for_user, the handover, run during it."""

    def __init__(self, duration_s, scope="client", locale="en", clock=time.monotonic,
                 timer_factory=threading.Timer, on_end=None):
        self.duration_s, self.scope = duration_s, scope
        self.texts = MESSAGES[locale]
        self.clock = clock
        self.on_end = on_end  # on_end(key, text, owner): the owner of the call that tripped it
        self._started = {}  # scope key -> (monotonic start, why, owner of the call that tripped it)
        self._told = {}  # scope key -> the owners told the whole text during this cooldown (refusal)
        self.timers = KeyedTimers(timer_factory, "cooldown")
        self._lock = threading.Lock()

    def key(self, session_id, owner=None):
        """Which cooldown covers a call of `owner` on `session_id`; None: none can (a session-less
        call under the session scope)."""
        if self.scope == "session":
            return None if session_id is None else f"session:{session_id}"
        if self.scope == "client" and owner is not None:
            return f"client:{owner}"
        return "server"

    def describe(self, tool, wall, page=None):
        """The `why` of a trip, for trigger: the call and the wall it ran into (and where)."""
        if wall == HANDOVER:
            return self.texts[HANDOVER]
        shown = self.texts.get(wall, self.texts["title"])
        return self.texts["why"].format(tool=tool, wall=shown) + (self.texts["page"].format(page=page) if page else "")

    def trigger(self, session_id, why, owner=None, logins_on=False):
        """Start (or restart) the cooldown; returns the timeout message for the call that tripped it.

        owner: the client whose call tripped it (HTTP); other clients are not told its `why`.
        logins_on: whether that client can call wait_for_user (else the message says how)."""
        if not self.duration_s:
            return None
        key = self.key(session_id, owner)
        if key is None:
            return None
        with self._lock:
            self._started[key] = (self.clock(), why, owner)
            self._told[key] = {owner}  # this call's LOGIN_TIMEOUT tells it all
        self.timers.schedule(key, self.duration_s, self._end)
        return self.texts["timeout"].format(why=why, whom=self._whom(session_id), left=self._left(self.duration_s),
                                            note="" if logins_on else self.texts["off_timeout"])

    def remaining_s(self, session_id, owner=None):
        """Seconds left, or 0 when not cooling down (an expired window resets here too)."""
        key = self.key(session_id, owner)
        with self._lock:
            started = self._started.get(key)
            if started is None:
                return 0.0
            left = started[0] + self.duration_s - self.clock()
            if left <= 0:
                del self._started[key]
                self._told.pop(key, None)
                return 0.0
            return left

    def message(self, session_id, owner=None, logins_on=False):
        """The cooldown message while active, else None; `owner`, the asking client, hears the
        reason only when its own call tripped it (or when the server has one client); logins_on:
        whether it can call wait_for_user (else the message says how)."""
        left = self.remaining_s(session_id, owner)
        if not left:
            return None
        with self._lock:
            _, why, tripped_by = self._started.get(self.key(session_id, owner), (0, self.texts["elsewhere"], None))
        if tripped_by is not None and tripped_by != owner:
            why = self.texts["elsewhere"]
        return self.texts["cooldown"].format(why=why, whom=self._whom(session_id), left=self._left(left),
                                             note="" if logins_on else self.texts["off_cooldown"])

    def refusal(self, session_id, owner=None, logins_on=False):
        """COOLDOWN_ACTIVE's message for a call of `owner` (the dispatcher's), or None when not cooling
        down: the whole text once a cooldown to each client, then only what changes and what to do.
        An agent that retries pays for each refusal, and the reads it may make are told already."""
        whole = self.message(session_id, owner, logins_on)
        if whole is None:
            return None
        key = self.key(session_id, owner)
        with self._lock:
            told = self._told.setdefault(key, set())
            first = owner not in told
            told.add(owner)
            _, why, tripped_by = self._started.get(key, (0, self.texts["elsewhere"], None))
        if first:
            return whole
        if tripped_by is not None and tripped_by != owner:
            why = self.texts["elsewhere"]
        return self.texts["again"].format(why=why, whom=self._whom(session_id),
                                          left=self._left(self.remaining_s(session_id, owner)),
                                          note="" if logins_on else self.texts["off_timeout"])

    def finish(self, session_id, owner=None):
        """The person finished (wait_for_user saw them done): end the cooldown that covers this call now.

        Under the server scope, only the client whose call tripped it can: another client's
        person finishing their own login says nothing about that wall."""
        key = self.key(session_id, owner)
        with self._lock:
            started = self._started.get(key)
            if started is None or started[2] not in (None, owner):
                return
            del self._started[key]
            self._told.pop(key, None)
        self.timers.cancel(key)
        if self.on_end is not None:
            self.on_end(key, self.texts["finished"], started[2])

    def _whom(self, session_id):
        return self.texts[self.scope].format(session=session_id)

    def _left(self, seconds):
        whole = math.ceil(seconds)
        return self.texts["left"].format(m=whole // 60, s=whole % 60)

    # TIMER THREAD: flag only; it never touches a browser.
    def _end(self, key):
        self.timers.forget(key)
        with self._lock:
            started = self._started.get(key)
            # 50 ms of slack: a timer may wake a hair before the monotonic deadline.
            if started is None or self.clock() < started[0] + self.duration_s - 0.05:
                return  # reset already, or restarted meanwhile
            del self._started[key]
            self._told.pop(key, None)
        if self.on_end is not None:
            self.on_end(key, self.texts["ended"], started[2])

    def cancel_all(self):
        self.timers.cancel_all()


# -- the memory guard ------------------------------------------------------------------------

MEMORY_SAMPLE_S = 1.0  # /proc is re-read at most this often


class MemoryGuard:
    """Refuses new sessions while the browser's processes use more than --max-memory-mb (0: off)."""

    def __init__(self, limit_mb, clock=time.monotonic):
        self.limit_mb, self.clock = limit_mb, clock
        self._sample = (-MEMORY_SAMPLE_S - 1.0, 0.0)  # (when sampled, MB)

    def over(self):
        """MB used by the browser's processes when over the limit, else None."""
        if not self.limit_mb:
            return None
        used = self.used_mb()
        return used if used > self.limit_mb else None

    def used_mb(self):
        """MB the browser's processes use (PSS), sampled at most every MEMORY_SAMPLE_S."""
        sampled, used = self._sample
        if self.clock() - sampled > MEMORY_SAMPLE_S:
            used = browser_pss_kb(os.getpid()) / 1024
            self._sample = (self.clock(), used)
        return used

    def check(self):
        used = self.over()
        if used is not None:
            used = math.ceil(used)  # rounded up: 64.3 MB over a 64 MB limit is not "64 MB, over 64"
            raise ResourceExhausted(
                f"The browser's processes use {used} MB, over the {self.limit_mb} MB limit "
                "(--max-memory-mb); close a session before creating another.",
                details={"usedMb": used, "limitMb": self.limit_mb})
