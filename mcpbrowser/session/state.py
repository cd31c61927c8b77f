"""One session's state: its tabs (each a `Tab`, with its dialog), secrets, and running a tool on them.

SESSION THREAD ONLY. Every Playwright object here was created on the session's own thread and is used only
there; event handlers also run on that thread, dispatched by Playwright while a call is in progress. What
other threads may read is copied out as plain data into `worker.info`.
"""

import time
from contextlib import contextmanager
from typing import Any

from mcpbrowser.errors import DialogOpen, PageCrashed, PageUnresponsive, TabClosed
from mcpbrowser.logs import log
from mcpbrowser.page_strings import a_, clip, crashed_with
from mcpbrowser.redaction import MARK_SECRET_FIELDS
from mcpbrowser.session import page_reading, playwright_internals, settle, snapshots, throttling
from mcpbrowser.session.acting import PROBE_AFTER_S, Acting
from mcpbrowser.session.downloads import Downloads
from mcpbrowser.session.events import EventBuffers, page_shown
from mcpbrowser.session.network_policy import NetworkPolicy
from mcpbrowser.session.routes import Routes
from mcpbrowser.session.tab import Tab
from mcpbrowser.trace_scrub import artifact_roots, scrub_leftovers

# A call that comes after this many quiet seconds first dispatches what the browser sent meanwhile.
CATCH_UP_AFTER_S = 0.2
# An alert loop must not trap a session. As Chrome offers "prevent this page from creating additional dialogs",
# the server answers dialogs itself once a page raised more than LOOP_DIALOGS in a row, each opening within
# LOOP_GAP_S of the previous one's answer, until that page navigates. A confirm followed by its alert ("Saved")
# is two: the agent still answers those.
LOOP_DIALOGS = 3
LOOP_GAP_S = 1.0


class SessionState(Acting):
    """The session's Playwright objects, its tabs and per-session buffers; created by the opener, used by tool
    handlers. What belongs to one page (its counts, refs, held snapshot, health) is its Tab's."""

    def __init__(self, worker, config, playwright, browser, context, page):
        self.worker = worker
        self.config = config
        self.playwright = playwright
        self.browser = browser  # the shared browser, as this Playwright holds it
        self.context = context
        self.tab: Any = Tab(page)  # the current tab; None only while its last tab closes
        self.tabs = [self.tab]
        self.tabs_opened = 0
        self._tabs_reported = 0
        # A dialog is the tab's that raised it (Tab.dialog): the context hears it, the agent answers it with
        # handle_dialog, and until then it holds the page tools on that tab only (see `blocker`).
        self._dialog_waiter = None
        self.untold: list = []     # dialogs opened since the last answer, told in the next one (_news)
        self.probe_due = False    # a dialog opened in another tab than the current one: may it hold this one?
        self.dialogs_dismissed = 0  # dialogs the server answered itself, not yet told
        self.crashes = []         # (tab, its dialog {type, message} or None): tabs that crashed, not yet told
        self.leaving = False       # navigate is taking the tab away: dialogs in its way are answered
        self.trapped = False       # ...but one could not be: the tab is held (see clear_the_way)
        self.replaced_tab = False  # navigate replaced a trapped tab, not yet told
        # Tabs whose pages closed themselves (window.close, as a login popup does), not yet told, and whether the
        # current one was among them: the agent would otherwise find itself in another tab unawares (closes_untold).
        self.closed_untold, self.current_closed = 0, False
        self.watching = False     # the page watch's engine is registered (see page_watch)
        self.network_policy = NetworkPolicy(worker.session_id)
        self.events = EventBuffers(config.console_buffer, config.network_buffer, self.network_policy, self.tab_of)
        worker.events = self.events
        self.routes = Routes(context, self.network_policy, self.events)
        self.downloads = Downloads(worker.session_id, config.files_dir(), config.max_download_mb,
                                   self.network_policy.refuses_download, self.events.request_for, worker.submit,
                                   lambda: self.secrets)
        self.files_saved = 0      # files this session saved (screenshots, PDFs, traces): their names' counter
        self.tracing = False      # trace_start ran, trace_stop not yet: the trace's name
        self.traced_fields = set()  # secret fields' values its snapshots met while tracing: the trace hides them
        self.withheld = set()     # texts typed where no field could be looked at (stored withheld): a trace hides them
        self.held = []            # what the running call holds as possibly secret (snapshots.hold)
        self.caller = None        # who made the call running now (asked about a domain, told a notice), or None
        self.elements_counted = None  # the page's element count, when this call's settle or title read had it
        self.settled = None       # (tab, navigations, title): the handler settled already this call (settle.now)
        self.answers_first = False  # this call's settle leaves its short timers to the next read (settle.ANSWERS_FIRST)
        self.unsettled = None     # (tab, navigations, first start, last start): actions whose settle.finish is due
        self.proven = 0           # the page watch's token at which a settle proved the held snapshot (take_proof)
        self._progress = None     # the running call's progress reporter, if it asked for one
        self.tell_user = lambda message: None  # the opener's: show the person a message (wait_for_user)
        self.storage_saved_at = 0.0   # monotonic time of the last resume save (0: never)
        self.storage_saved_url = None
        self.chromium = browser.browser_type.name == "chromium"  # then a CDP session per tab (Tab.cdp)
        self.throttle = {}        # its CPU and network throttling (throttling.settings), {} for none
        self.disconnect_at_close = False  # set by the opener: see close()
        self.quiet_since = time.monotonic()  # when the last call ended: see catch_up
        self.told = None          # (url, title) the agent's last answer gave: a read of the same page omits them
        self.answered_tab = None  # the tab the last answer spoke of: its capture stores no other tab's page

    @property
    def session_id(self):
        return self.worker.session_id

    @property
    def secrets(self):
        """Secret values its client met (typed, or in secret fields): scrubbed from all output and storage."""
        return self.worker.secrets

    # -- setup and teardown ------------------------------------------------------

    def listen(self):
        """Subscribe to the context's events; every page, popups included, belongs to the session."""
        self.context.on("page", self._on_page)
        self.context.on("dialog", self._on_dialog)
        self.events.listen(self.context)
        self._follow(self.tab)
        self.context.add_init_script(script=settle.INSTALL)  # the settle rule's script, in every document
        self.context.add_init_script(script=MARK_SECRET_FIELDS)  # a password field stays one (redaction.py)

    def storage_saved(self, url):
        """A resume save of the page at `url` was written now (core/recorder.py's save_storage)."""
        self.storage_saved_at, self.storage_saved_url = time.monotonic(), url

    def withhold(self, text):
        """A text typed where no field could be looked at, stored withheld: a trace's parameters hide it too."""
        self.withheld.add(text)

    def narrow(self, allowed_domains):
        """Apply a session's own allowedDomains (a pooled session gets them when handed out)."""
        self.network_policy.narrow(allowed_domains)
        self.worker.options["allowed_domains"] = allowed_domains  # a watchdog restart keeps them

    def close(self):
        snapshots.stop_hiding(self)  # the client's book (the logs' scrubbing) holds them too: let go
        # Stopping this thread's Playwright ends its connection (the relay or the driver), which is all that is
        # ours: the browser is shared. Through a driver of our own, browser.close() comes first: on a browser
        # reached with connect() it only disconnects, and only then does the driver remove its
        # playwright-artifacts-* folder from /tmp. Through the relay it would close the shared browser itself.
        # A trace never saved is stopped first, which waits until the browser server has written it all: closing
        # the context records on while it closes the pages, so a last event could land after the leftovers went.
        steps = [self.context.tracing.stop] if self.tracing else []
        steps.append(self.context.close)
        if self.disconnect_at_close:
            steps.append(self.browser.close)
        steps += [self.playwright.stop, self.network_policy.close]
        if self.tracing:  # a trace never saved: the browser server's own files of it go too
            steps.append(lambda: scrub_leftovers(self.tracing, artifact_roots(), self.secrets))
        for step in steps:
            try:
                step()
            except Exception as exc:  # the browser may already be gone; keep tearing down
                log.debug("session teardown step failed",
                          extra={"session": self.session_id, "error": str(exc)})

    # -- running tools -----------------------------------------------------------

    def run_tool(self, tool, args, response):
        """Run one tool's handler with the checks and notes every page tool shares."""
        # Behind a dialog too: its page may have crashed meanwhile, taking the dialog with it (not DIALOG_OPEN then).
        if time.monotonic() - self.quiet_since > CATCH_UP_AFTER_S:
            self.catch_up()
        self.events.resume_network()
        if tool.page_tool and not tool.leaves_page and self.blocker is None and self.probe_due \
                and self.tab is not None and not self.tab.crashed and not self.tab.page.is_closed():
            self.probe_due = False
            self.responsive()  # another tab's dialog may hold this page too: then it is named below
        if tool.page_tool and self.blocker is not None and not tool.leaves_page:
            raise self.dialog_open_error()
        if self.tab is not None and self.tab.crashed and not tool.page_free:  # it crashed between calls
            raise self.replace_crashed_page()
        if self.tab is None or self.tab.page.is_closed():
            self._open_blank_tab()
        # The agent's tab closed itself since its last answer (the catch-up heard it): an action meant for it must
        # not land in the tab now current (a password typed into another site), nor a tabs index that moved.
        acts = tool.page_tool and (not tool.read_only or tool.meant_for_tab)
        if self.current_closed and acts or self.closed_untold and tool.name == "tabs" \
                and args.get("action", "list") != "list":
            raise self.tab_closed_error()
        tab = self.tab
        if tool.page_tool and not tool.leaves_page and tab.unresponsive and not self.responsive():
            raise self.unresponsive_error()
        if tool.name in settle.READS:
            settle.finish(self)
        # An answer that shows the page (--response-mode full) reads it: its action's timers are waited for.
        self.answers_first = tool.name in settle.ANSWERS_FIRST and not (response.stores_page
                                                                          and not response.stores_after)
        dialog_before, navigations_before = self.blocker, tab.navigations
        url_before, tabs_before, mark_before = tab.page.url, self.tabs_opened, tab.page_mark
        refusals_before = self.network_policy.refusals()
        started = time.monotonic()
        try:
            tool.handler(self, args, response)
        except Exception as exc:
            # What the page did meanwhile, as facts: the call's end classifies the failure from them and the
            # exception (core/on_session.py), which goes on as it is.
            if self.tab is not None and self.tab.crashed:
                response.page_failed(crashed=True)
            elif tool.page_tool and not tool.leaves_page and not isinstance(exc, PageUnresponsive) \
                    and time.monotonic() - started > PROBE_AFTER_S and self.tab is tab \
                    and not self.responsive() and self.blocker is None:
                response.page_failed(crashed=False)
            raise
        if self.tab is None:  # the session's last tab closed itself during the call
            self._open_blank_tab()
        title, facts = None, {}
        stayed = tool.changes_page and tool.page_tool and not tool.leaves_page and self.blocker is None \
            and self.tab is tab
        # (A handler that settled already heard the page answer: settle.now.)
        if stayed and self.settled is None and time.monotonic() - started > PROBE_AFTER_S and not self.responsive():
            # A slow action, then a page that does not answer: a link whose page holds its own unload, say.
            facts["pageUnresponsive"] = True
        elif stayed and tab.navigations == navigations_before:
            title = settle.settle(self, time.monotonic() - started, self.config.action_timeout / 1000, tabs_before)
        if stayed and "pageUnresponsive" not in facts and tab.navigations == navigations_before \
                and tab.page_mark != mark_before:
            self._await_document(tab, navigations_before)
        if tool.changes_page:
            navigated = self.tab is not tab or tab.navigations != navigations_before
            if "url" not in response.result:
                facts.update(self._page_state(navigated, None if navigated else title, count=response.stores_after))
                if not navigated and tab.navigations != navigations_before:
                    # A navigation committed as the answer was read (its request came after the settle's look, a race
                    # _await_document leaves): its load is waited for and its title read, as an immediate one's.
                    navigated = True
                    facts.update(self._page_state(True, count=response.stores_after))
            if not navigated and tab.page.url != url_before:
                # The same document at another URL (the History API, a fragment): refs stay valid. A same-document
                # navigation to the URL it was at (a router pushing the route it shows) changed nothing to tell.
                facts.update(url=tab.page.url, navigated=False, urlChanged=True)
            if navigated and self.tab is tab and self.network_policy.shows_refusal(tab.page.url, refusals_before):
                # It sent the tab where the policy forbids: the proxy refused the request, as it refuses navigate's.
                raise self.network_policy.blocked_error(tab.page.url, tool.name)
        facts.update(self._news(dialog_before))
        response.page_news(facts)  # the call's end words them into the answer (core/answer.py's with_news)
        shown = {**response.result, **facts}
        if "url" in shown and "title" in shown:
            self.told = (shown["url"], shown["title"])
        # A tab that closed itself under its call leaves another current, which the answer names but the call did
        # not touch: its refId stores none (snapshots.capture_snapshot), as after a close that came after the answer.
        self.answered_tab = None if tab not in self.tabs and not tab.closing else self.tab

    def _await_document(self, tab, navigations_before):
        """A navigation the action's timer or response started is on its way (its document requested during the
        call, not committed yet: a server that takes its time): wait for it to commit, or to end without a document
        (a download, a 204), within the action timeout; the answer then tells it as an immediate one's."""
        deadline = time.monotonic() + self.config.action_timeout / 1000
        try:
            while tab.document_request is not None and tab.navigations == navigations_before \
                    and self.blocker is None and time.monotonic() < deadline:
                tab.page.wait_for_timeout(20)  # the page's events come meanwhile
        except Exception as exc:  # the page closed or crashed: the answer says where the session is
            log.debug("navigation after action not awaited", extra={"session": self.session_id, "error": str(exc)})

    def _news(self, dialog_before):
        """What the pages did that the agent was not told yet, each told once: a dialog that opened during the
        call on its tab, the dialogs open in other tabs, other tabs that crashed, the tabs opened (between calls
        too), a tab navigate replaced, the dialogs the server dismissed, downloads."""
        news = {}
        if self.blocker is not None and self.blocker is not dialog_before:
            news["dialog"] = self.dialog_info()
        # Another tab's dialog holds nothing here, but the agent must not be left unaware of it.
        elsewhere = [self.dialog_info(tab.dialog) for tab in self.tabs
                     if tab.dialog in self.untold and tab.dialog is not self.blocker]
        if elsewhere:
            news["tabDialogs"] = elsewhere
        self.untold = []
        crashed = self.crashes_untold()
        if crashed:
            news["crashedTabs"] = crashed
        if self.tabs_opened > self._tabs_reported:
            news["newTabs"], self._tabs_reported = self.tabs_opened - self._tabs_reported, self.tabs_opened
        if self.replaced_tab:
            news["tabReplaced"], self.replaced_tab = True, False
        if self.dialogs_dismissed:
            news["dialogsDismissed"], self.dialogs_dismissed = self.dialogs_dismissed, 0
        news.update(self.closes_untold())
        downloads = self.downloads.news()
        if downloads:
            news["downloads"] = downloads
        return news

    def catch_up(self):
        """Dispatch what the browser said while the session was quiet: a dialog above all.

        Playwright reads its connection only while a call is in progress, so a dialog that opened while the agent
        thought is unread when the next call comes, which would meet it halfway and answer as if it had opened it.
        One round trip to the browser process, which no page can hold up; only after a quiet spell.
        """
        try:
            self.flush_events()
        except Exception as exc:  # the browser is gone: the call itself will say so
            log.debug("catch-up round trip failed", extra={"session": self.session_id, "error": str(exc)})

    @contextmanager
    def running(self, tool, response, args):
        """The page-side state around one call (core/on_session.py's OnSession.run): its secret marked
        before it, its progress heard while it runs, the snapshots it held released after it."""
        snapshots.before_call(self, tool)
        snapshots.stop_hiding(self, only_if_due=True)  # a secret typed key by key before: its late echoes came by now
        self.elements_counted = self.settled = None
        if args.get("secret") and isinstance(args.get("text"), str) and args["text"]:
            snapshots.mark_secret(self, response, args["text"])
        # A person's input may run inside a long call (worker.between): it gives the outer call back its own.
        outer = self._progress, self.caller
        self._progress, self.caller = response.progress, response.caller
        try:
            yield
        finally:
            self._progress, self.caller = outer
            self.quiet_since = time.monotonic()
            for held in list(self.held):
                snapshots.release(self, held)

    def crashes_untold(self):
        """[{tab, dialog?}]: the other tabs that crashed since the last answer, with the dialog each held (gone with
        its page), each told once; the current tab's is told by the PAGE_CRASHED its next call answers."""
        told = [{"tab": self.tabs.index(tab), **({"dialog": dialog} if dialog else {})}
                for tab, dialog in self.crashes if tab in self.tabs and tab is not self.tab]
        self.crashes = [(tab, dialog) for tab, dialog in self.crashes if tab is self.tab]
        return told

    def closes_untold(self):
        """{closedTabs, currentTab?}: how many tabs closed themselves since the last answer, and the tab now current
        when the current one was among them; told once, by the next answer or a failed call's error."""
        if not self.closed_untold:
            return {}
        if self.tab is None:  # the last one closed: the session goes on in a fresh tab, which the answer names
            self._open_blank_tab()
        told = {"closedTabs": self.closed_untold}
        if self.current_closed and self.tab in self.tabs:
            told["currentTab"] = self.tabs.index(self.tab)
        self.closed_untold, self.current_closed = 0, False
        return told

    def tab_closed_error(self, during=False):
        """TAB_CLOSED, with what closed (closes_untold): before the call (nothing was done), or during it."""
        told = self.closes_untold()
        now = f"The current tab is now tab {told['currentTab']} ({clip(self.tab.page.url)}): take a snapshot to " \
            "see it, or pick another with tabs." if "currentTab" in told else "List them with tabs first."
        if during:
            said = "The tab closed itself during the call (its page called window.close()); what the call did " \
                "before that stands."
        elif "currentTab" in told:
            said = "The tab you worked in closed itself after your last answer (its page called window.close()); " \
                "nothing was done."
        else:
            count = told["closedTabs"]
            said = f"{count} tab{'s' if count > 1 else ''} closed {'themselves' if count > 1 else 'itself'} " \
                "since your last answer, so the tabs' indices moved; nothing was done."
        # `during` tells a reader of the history too (an exported test replays what such a call did) that it acted.
        return TabClosed(f"{said} {now}", session_id=self.session_id, details={**told, "during": True} if during
                         else told)

    def dismissals_untold(self):
        """How many dialogs the server dismissed since the last answer (see run_tool), told now by a failed call's
        error (core/answer.py's told_meanwhile)."""
        count, self.dialogs_dismissed = self.dialogs_dismissed, 0
        return count

    def _page_state(self, navigated, title=None, count=False):
        """Where an action left the agent: url, title, and whether it navigated, so the agent needs no extra call.

        A navigation the action started has committed by now (Playwright waits for that); its load is awaited
        here (up to the action timeout), so that the title, and the snapshot the history captures next, are of
        the new page. The title is loaded_title's, or the one the settle just read (title) when the page stayed.
        """
        if navigated and self.blocker is None:
            try:  # at most the action timeout: a slow page's answer says where it is so far
                self.tab.page.wait_for_load_state("load", timeout=self.config.action_timeout)
            except Exception as exc:  # a slow page: answer with what is there
                log.debug("load after action not reached", extra={"session": self.session_id, "error": str(exc)})
        if title is None or navigated or self.blocker is not None:  # else the settle's, read just now
            title = page_reading.loaded_title(self, count)
        self.remember_page(title)
        return {"url": self.tab.page.url, "title": title, "navigated": navigated}

    def report(self, done, total, message):
        """Tell the caller how a long call is going, when it asked (MCP progressToken)."""
        if self._progress is not None:
            try:
                self._progress(done, total, message)
            except Exception:
                log.debug("progress report failed", extra={"session": self.session_id})

    def remember_page(self, title):
        """Publish url and title as plain data for list_sessions (and the log resources' titles) while this
        thread is busy (events.page_shown)."""
        self.worker.info = page_shown(self.tab.page.url, title, self.secrets)

    def describe(self):
        if self.blocker is None and not self.tab.unresponsive:
            self.remember_page(self.tab.page.title())
        return dict(self.worker.info)

    def flush_events(self):
        """Make one round trip so that events the browser already sent are dispatched."""
        self.context.cookies("about:blank")

    def dialog_open_error(self):
        """The DIALOG_OPEN error for the dialog that holds the current tab, which tells the agent of it."""
        if self.blocker in self.untold:
            self.untold.remove(self.blocker)
        summary = self.dialog_summary()  # its first letter up, the dialog's own text as it reads
        return DialogOpen(f"{summary[:1].upper()}{summary[1:]} is open; it blocks the page. "
                          "Answer it with handle_dialog first.", session_id=self.session_id, details=self.dialog_info())

    def _elsewhere(self, dialog):
        """The index of the tab that raised `dialog` when that is not the current tab, else None."""
        tab = self.tab_of(dialog.page)
        return None if tab is self.tab or tab is None else self.tabs.index(tab)

    def dialog_summary(self, dialog=None):
        """'an alert dialog ('Hello')', '... in tab 1': a dialog (the current tab's), as an answer names it."""
        dialog = dialog or self.blocker
        index = self._elsewhere(dialog)
        return f"{a_(dialog.type)} dialog ({clip(dialog.message)!r}){'' if index is None else f' in tab {index}'}"

    def dialog_info(self, dialog=None):
        """{type, message}, a prompt's defaultValue (an alert, a confirm and a beforeunload have none), and the
        tab when it is not the current one: a dialog (the current tab's)."""
        d = dialog or self.blocker
        prompt = {"defaultValue": d.default_value} if d.type == "prompt" else {}
        index = self._elsewhere(d)
        return {"type": d.type, "message": d.message, **prompt, **({} if index is None else {"tab": index})}

    def answer_dialog(self, dialog, accept, prompt_text=None):
        """Answer an open dialog; False when it had closed already (its tab closed or navigated)."""
        tab = self.tab_of(dialog.page)
        if tab is not None:
            tab.dialog, tab.dialog_answered_at = None, time.monotonic()
        self._dialog_waiter = None
        try:
            if accept:
                dialog.accept(prompt_text) if prompt_text is not None else dialog.accept()
            else:
                dialog.dismiss()
        except Exception as exc:
            # Playwright's protocol error "No dialog is showing": nothing of ours to report
            # as a browser failure; the caller says what happened instead.
            log.debug("dialog gone before its answer", extra={"session": self.session_id, "error": str(exc)})
            return False
        return True

    def clear_the_way(self):
        """navigate's start: dismiss the dialog that blocks the tab, and any that opens until it is away. A tab whose
        page raises dialogs in a loop is replaced (see trapped): its next dialog would come during the navigation,
        where Chromium holds the navigation and refuses to answer the dialog."""
        self.leaving, self.trapped = True, False
        if self.blocker is not None:  # its own, or another tab's that holds it
            self.answer_dialog(self.blocker, False)
            self.dialogs_dismissed += 1
        if self.tab.looping or self.tab.unresponsive:
            self.replace_tab()

    def replace_tab(self):
        """Close the current tab, whatever its page is doing, and carry on in a fresh one of the same context (as a
        person does with a tab that will not let go): cookies and storage stay; the tab's back history goes."""
        old = self.tab
        self.events.hand_over(old, self._open_blank_tab(at=self.tabs.index(old) if old in self.tabs else None))
        self.replaced_tab = True
        try:
            self.close_tab(old)
        except Exception as exc:  # gone already
            log.debug("trapped tab close failed", extra={"session": self.session_id, "error": str(exc)})
        log.info("trapped tab replaced", extra={"event": "tab_replaced", "session": self.session_id})

    def select_tab(self, index):
        self.tab = self.tabs[index]
        self.probe_due = self.holder(besides=self.tab) is not None
        self.tab.page.bring_to_front()

    # -- event handlers (run on this thread while a Playwright call is in progress) ----

    def _open_blank_tab(self, at=None):
        """Open a page of our own and make it current, at index `at` (in a replaced tab's place: the other tabs keep
        their numbers) or last; unlike a popup, it is no news for the agent."""
        opened = self.tabs_opened
        self.tab = self._on_page(self.context.new_page())  # its "page" event may not have been dispatched yet
        self._tabs_reported += self.tabs_opened - opened
        if at is not None and self.tab in self.tabs:
            self.tabs.remove(self.tab)
            self.tabs.insert(at, self.tab)
        return self.tab

    def _on_crash(self, tab):
        """A tab's renderer died (its "crash" event): the next call on it replaces it, and the crash is told with
        the dialog it held, which died with its renderer (crashes_untold)."""
        self.crashes.append((tab, tab.dialog and {"type": tab.dialog.type, "message": tab.dialog.message}))
        tab.crashed, tab.dialog = True, None
        if tab is self.tab:
            self.worker.page_crashed = True

    def replace_crashed_page(self):
        """Give the session a fresh page in the same context; return the PAGE_CRASHED error."""
        dead, url = self.tab, self.tab.page.url
        gone = next((dialog for tab, dialog in self.crashes if tab is dead and dialog), None)
        self.crashes = [(tab, dialog) for tab, dialog in self.crashes if tab is not dead]
        self.worker.page_crashed = False
        at = self.tabs.index(dead) if dead in self.tabs else None
        if at is not None:
            self.tabs.remove(dead)
        try:
            self.close_tab(dead)
        except Exception:
            pass  # a crashed page may refuse to close cleanly
        self.events.hand_over(dead, self._open_blank_tab(at=at))
        self.worker.info = {"url": "about:blank", "title": ""}
        log.warning("page crashed: replaced", extra={"event": "page_crashed", "session": self.session_id})
        return PageCrashed(f"The page at {clip(url)} crashed{crashed_with(gone)}. The session has a fresh page at "
                           "about:blank (same cookies and storage); navigate again.", session_id=self.session_id,
                           details={"url": url, **({"dialog": gone} if gone else {})})

    def _answer_itself(self, tab, dialog):
        """A dialog of a looping page, or in navigate's way: dismissed (a beforeunload one accepted while
        leaving); False when the browser refused the answer."""
        self.dialogs_dismissed += 1
        if tab is not None:
            tab.dialog_answered_at = time.monotonic()
        try:
            if self.leaving and dialog.type == "beforeunload":
                dialog.accept()
            else:
                dialog.dismiss()
        except Exception as exc:  # it closed already, or its tab is navigating
            log.debug("dialog refused the server's answer", extra={"session": self.session_id, "error": str(exc)})
            return False
        return True

    def _follow(self, tab):
        page = tab.page
        tab.log_pages.add(self.events.key(page))  # its console and network entries (events.py)

        def navigated(new_document):
            tab.navigated(new_document)
            if tab is self.tab:
                # Published now (list_sessions and the resource list read it while this thread is busy).
                self.worker.info = page_shown(page.url, self.worker.info["title"], self.secrets)
                if new_document:
                    self.leaving = False  # the tab left: the new page's dialogs are the agent's

        try:
            playwright_internals.on_main_frame_navigated(page, navigated)
        except AttributeError:  # Playwright moved its private event: every navigation counts as a new document
            page.on("framenavigated", lambda frame: navigated(True) if frame is page.main_frame else None)
        page.on("close", lambda _: self._on_tab_closed(tab))
        page.on("crash", lambda _: self._on_crash(tab))
        page.on("websocket", lambda ws: self.events.on_websocket(ws, page))
        page.on("download", self.downloads.on_download)

    def tab_of(self, page):
        return next((tab for tab in self.tabs if tab.page is page), None)

    def _on_page(self, page):
        """A page the context opened (a popup, a new tab): the session's Tab of it, made once."""
        tab = self.tab_of(page)
        if tab is not None:
            return tab
        tab = Tab(page)
        self.tabs.append(tab)
        self.tabs_opened += 1
        self._follow(tab)
        if self.throttle:  # a popup or new tab is as slow as the session's other tabs
            try:
                throttling.apply(self, tab)
            except Exception as exc:  # closed already
                log.debug("throttling a new tab failed", extra={"session": self.session_id, "error": str(exc)})
        return tab

    def close_tab(self, tab):
        """Close a tab for the agent (tabs close) or the server (a tab replaced): no news, unlike a page closing
        itself (_on_tab_closed)."""
        tab.closing = True
        tab.page.close()

    def _on_tab_closed(self, tab):
        if tab in self.tabs:
            self.tabs.remove(tab)
            self.closed_untold += not tab.closing
        if tab is self.tab:
            self.tab = self.tabs[-1] if self.tabs else None
            self.current_closed = self.current_closed or not tab.closing

    def _on_dialog(self, dialog):
        page = dialog.page
        # Its page's "page" event may not have come yet; a page closed meanwhile is no tab of the session's.
        tab = None if page is None else self.tab_of(page) or (None if page.is_closed() else self._on_page(page))
        if tab is not None:  # a loop is one page's: counted on its tab
            tab.dialog_run = tab.dialog_run + 1 if time.monotonic() - tab.dialog_answered_at < LOOP_GAP_S else 1
            tab.looping = tab.looping or tab.dialog_run > LOOP_DIALOGS
        if self.leaving or (tab is not None and tab.looping):
            if not self._answer_itself(tab, dialog) and self.leaving:
                # Refused: a navigation of this tab has begun, and Chromium holds it until the
                # dialog is answered. The navigation stops waiting; navigate replaces the tab.
                self.trapped = True
                waiter = self._dialog_waiter
                if waiter is not None and not waiter.done():
                    waiter.set_result(dialog)
            return
        if tab is None:  # no page of the session's raised it: nothing it holds, nobody to ask
            self._answer_itself(None, dialog)
            return
        tab.dialog = dialog
        self.untold.append(dialog)
        self.probe_due = self.probe_due or tab is not self.tab
        # Any tab's dialog wakes a running act: one in another tab may freeze the act's page too (Acting.act).
        waiter = self._dialog_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(dialog)
