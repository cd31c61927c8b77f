"""Break each guard the docs promise, one at a time in a scratch copy, and see its test fail.

Not part of the test suite (it runs each break's tests: 9 to 17 minutes on 2 cores). Each entry of
BREAKS below is a one-line change to the code that undoes one promise of the manual, and the
tests that must notice it. The script copies the repository's files (tracked, and untracked
ones git does not ignore) to a scratch directory per job, with the repository's .venv linked
in, and runs pytest there with PYTHONPATH set to the copy (a probe plugin refuses the run when
`mcpbrowser` is imported from anywhere else). First, once per distinct set of tests, it runs
that set on the unbroken copy: it must pass, or a failure with the break would prove nothing.
Then, for each break: apply it, run its tests with a timeout, restore the file.

    .venv/bin/python scripts/guard_breaks.py [--list] [--only ID ...] [--jobs 1] [--timeout 300]

Each break is reported `caught` (a named test failed), `NOT CAUGHT` (they all passed),
`TIMEOUT` or `ERROR` (the baseline failed, the find-text is gone or not unique, or pytest
could not run the tests); the exit code is 1 unless every break was caught.

To add a break, add a Break(...) to BREAKS: its find-text must occur exactly once in its file
(`tests/test_guard_breaks.py` checks that, the ids and the test names, in the unit run).
"""

import argparse
import concurrent.futures
import dataclasses
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Break:
    id: str
    file: str  # relative to the repository's root
    find: str  # one line (or part of one), found exactly once in the file
    replace: str
    promise: str  # what the break undoes, in the words of the doc below
    doc: str
    tests: tuple[str, ...]  # pytest node ids; the break is caught when one of them fails


# Tests that hold several breaks' promises.
BREAKER = "tests/test_threads.py::test_a_call_that_works_closes_the_count_and_the_pause_is_breaker_reset_long"
DIFFS = ("tests/test_history.py::test_the_diff_cursor_is_each_sessions_a_search_leaves_it_and_a_long_diff_is_the_"
         "page")
LOCATORS = "tests/test_script_export_units.py::test_a_locators_exact_and_nth_are_decided_as_playwright_matches_names"
POPUPS = "tests/test_tools.py::test_a_form_a_formtarget_and_a_base_target_that_open_a_tab_are_told_as_a_link_is"
PRIVATE = ("tests/test_policy.py::test_under_block_private_a_wildcard_trusts_no_private_address_and_every_address_is_"
           "checked")
COOKIES = ("tests/test_cookies_storage.py::test_a_cookie_the_agent_sets_httponly_is_a_secret_and_a_filter_by_domain_"
           "names_none")
CONSOLE_TABS = ("tests/test_mcp_kernel.py::test_console_logs_show_the_newest_50_and_count_what_the_same_filter_finds_"
                "in_other_tabs")
NETWORK_STATIC = "tests/test_mcp_kernel.py::test_network_logs_list_routed_static_files_and_the_types_asked_for"
SERVER_LOG = ("tests/test_mcp_kernel.py::test_the_server_log_tells_and_keeps_a_clients_own_records_even_once_its_"
              "session_closed")
SESSION_ENDS = "tests/test_mcp_kernel.py::test_a_session_that_expires_or_whose_browser_dies_ends_its_subscriptions"
PRUNING = ("tests/test_store.py::test_a_running_store_prunes_every_thousand_writes_and_the_pages_only_old_calls_kept_"
           "go")

KERNEL_PARAMS = "tests/test_mcp_kernel.py::test_params_read_before_the_types_load_are_checked_as_the_models_would"
BOUNDS = ("tests/test_config.py::test_each_setting_is_refused_just_past_its_bound_and_a_switch_reads_every_spelling_"
          "of_yes_and_no")
QUOTA = "tests/test_properties.py::test_a_full_quota_is_a_full_disk_and_a_retry_hint_is_a_number_of_milliseconds"
LEAK_WORDS = ("tests/test_memory_leaks.py::test_the_answer_counts_the_leaks_it_leaves_out_and_a_comparison_says_when_"
              "the_runs_differ")
HOLDERS = ("tests/test_memory_leaks.py::test_a_holder_is_found_by_strong_references_only_and_a_long_path_is_cut_in_"
           "the_middle")
PERF_MEDIAN = "tests/test_performance_insights.py::test_several_loads_are_told_by_the_median_one_with_their_spread"
PERF_CAUSES = ("tests/test_performance_insights.py::test_the_pages_own_favicon_and_what_blocked_rendering_after_the_"
               "first_paint_are_not_causes")
PERF_COMPARE = ("tests/test_performance_insights.py::test_a_change_within_either_runs_spread_is_noise_and_other_"
                "throttling_is_not_alike")

ROUTE_MISTAKES = ("tests/test_routes.py::test_a_route_that_says_no_one_thing_or_matches_nothing_is_refused_saying_"
                  "why")
PT_MISTAKES = "tests/test_page_tools.py::test_a_call_short_of_its_required_input_or_its_frame_says_what_to_give"
STORAGE = ("tests/test_cookies_storage.py::test_a_forbidden_origins_storage_is_not_touched_and_a_long_value_is_listed_"
           "short")
COOKIE_SET = "tests/test_cookies_storage.py::test_a_cookie_is_set_read_and_deleted"

BREAKS = [
    # -- a seventh hunt's (helper-52, 2026-12-07): log tools, log resources, the server log, the history's writer --
    Break("console-logs-default-50", "mcpbrowser/tools/monitoring.py",
          'shown = entries[-args.get("limit", DEFAULT_LIMIT):]', 'shown = entries[-args.get("limit", 500):]',
          "console_logs and network_logs show the newest 50 by default; older says how many were left out.",
          "docs/tools.md", (CONSOLE_TABS,)),
    Break("other-tabs-same-filters", "mcpbrowser/tools/monitoring.py",
          "**_elsewhere(state, lambda tab: picked(state.events.console_of(tab, shared=False)))})",
          "**_elsewhere(state, lambda tab: state.events.console_of(tab, shared=False))})",
          "What the same filters find in the session's other open tabs is counted (otherTabs).", "docs/tools.md",
          (CONSOLE_TABS,)),
    Break("resource-type-lists-static", "mcpbrowser/tools/monitoring.py",
          'if not args.get("includeStatic") and "resourceType" not in args:', 'if not args.get("includeStatic"):',
          "network_logs: resourceType keeps those types (static files that loaded fine too).", "docs/tools.md",
          (NETWORK_STATIC,)),
    Break("routed-static-listed", "mcpbrowser/tools/monitoring.py",
          'or _failed(p[0]) or "routed" in p[0]]', "or _failed(p[0])]",
          "network_logs lists a routed request with `routed`, static files too.", "docs/tools.md",
          (NETWORK_STATIC,)),
    Break("new-subscription-hears-what-comes-next", "mcpbrowser/resources/watch.py",
          "self._told[name] = position  # a new subscription hears of what comes next", "self._told[name] = 0",
          "A notification says read again: a subscription is told of entries that came after it, not before.",
          "docs/live-logs.md",
          ("tests/test_mcp_kernel.py::test_the_watch_tells_at_most_once_per_window_and_never_leaves_news_untold",)),
    Break("server-log-tells-its-own-client", "mcpbrowser/resources/server_log.py",
          "views = [v for o, v in self._views.items() if o is None or (about and o == owner)]",
          "views = [v for o, v in self._views.items() if o is None or about]",
          "The server log's cursor moves with a client's own records alone and tells it nothing of others' work.",
          "docs/live-logs.md", (SERVER_LOG,)),
    Break("server-log-closed-sessions-owner", "mcpbrowser/resources/server_log.py",
          "            self._owners[session] = owner", "            pass",
          "A client's server log holds what happened in its own sessions: a record after one closed too.",
          "docs/live-logs.md", (SERVER_LOG,)),
    Break("server-log-future-cursor", "mcpbrowser/resources/server_log.py",
          "cursor = page[-1][0] if page else max(min(after, position), 0)", "cursor = page[-1][0] if page else after",
          "Read next (?after=CURSOR) for the entries after those read: a cursor past the end reads what comes next.",
          "docs/live-logs.md", (SERVER_LOG,)),
    Break("expiry-ends-subscriptions", "mcpbrowser/core/sessions.py",
          "        self.timers.forget(session_id)",
          "        self.timers.forget(session_id); self.on_ended = lambda session_id: None",
          "A subscription ends when its session ends: expired too (a 2026-07-28 listen is then answered).",
          "docs/live-logs.md", (SESSION_ENDS,)),
    Break("browser-crash-ends-subscriptions", "mcpbrowser/core/sessions.py",
          "            self.timers.cancel(record.session_id)",
          "            self.timers.cancel(record.session_id); self.on_ended = lambda session_id: None",
          "A subscription ends when its session ends: lost with its browser too.", "docs/live-logs.md",
          (SESSION_ENDS,)),
    Break("log-line-names-no-client", "mcpbrowser/logs.py",
          'reserved_attrs=[*RESERVED_ATTRS, "owner"],', "reserved_attrs=[*RESERVED_ATTRS],",
          "Without tokens the Mcp-Session-Id is the client's only credential: no log line carries it.",
          "docs/http.md", ("tests/test_secret_units.py::test_a_log_line_never_names_the_client_whose_call_it_is",)),
    Break("typed-prefixes-out-of-log-entries", "mcpbrowser/session/events.py",
          "entry[key] = scrub_text(value, self.hidden)", "entry[key] = value",
          "A secret typed key by key: its prefixes are hidden as well, in the console and network entries too.",
          "docs/safety.md",
          ("tests/test_secret_units.py::test_a_secret_typed_key_by_key_leaves_no_prefix_in_the_log_entries_that_"
           "came_meanwhile",)),
    Break("unrecorded-call-loses-its-request-row", "mcpbrowser/core/store.py",
          'self.write("DELETE FROM requests WHERE ref_id = ?", (ref,))',
          'self.write("DELETE FROM requests WHERE ref_id = ? AND 0", (ref,))',
          "A call answered not recorded keeps no row, even once space returns (its request row written before).",
          "docs/history.md",
          ("tests/test_store_faults.py::test_a_call_answered_not_recorded_loses_the_request_row_already_written",)),
    Break("pending-keeps-the-newest", "mcpbrowser/core/store.py",
          "drop = {id(w) for w in loose[:len(loose) - PENDING_MAX]}", "drop = {id(w) for w in loose[PENDING_MAX:]}",
          "The resume state and diff cursors are written when the disk allows (the newest 5,000).",
          "docs/history.md",
          ("tests/test_store_faults.py::test_while_writes_fail_the_newest_writes_no_answer_waits_for_are_kept",)),
    Break("retention-drops-console-lines", "mcpbrowser/core/store.py",
          'for table in ("responses", "console_logs", "diff_cursors", "call_owners"):',
          'for table in ("responses", "diff_cursors", "call_owners"):',
          "Retention drops the oldest history: a call's console lines with it.", "docs/history.md",
          ("tests/test_store.py::test_retention_days_prunes_old_history_at_start",)),
    Break("failed-resume-gives-back-its-claim", "mcpbrowser/core/lifecycle_tools.py",
          "        core.history.release_claim(session_id)", "        pass",
          "resume_session refused as it opens leaves the session to resume later, not SESSION_IN_USE.",
          "docs/history.md",
          ("tests/test_store.py::test_a_resume_that_cannot_open_leaves_the_session_to_resume_later",)),
    # -- an untruth read from outside (2026-12-07, twenty-first session) -------------------------------------------
    Break("narrowed-out-names-the-sessions-list", "mcpbrowser/session/network_policy.py",
          "if self.policy.narrowed_out(host):", "if False:",
          "A host only the session's own allowedDomains leave out is refused at once, naming that list.",
          "docs/safety.md",
          ("tests/test_policy.py::test_a_host_only_the_sessions_own_allowed_domains_leave_out_is_refused_naming_that_"
           "list",)),
    Break("a-late-slow-navigation-is-awaited", "mcpbrowser/session/state.py",
          "self._await_document(tab, navigations_before)", "pass",
          "An action says whether it loaded a new document: one its timer started to a slow server too.",
          "docs/tools.md", ("tests/test_single_page_apps.py::test_a_new_document_is_navigated[#away-slow-Slow]",)),
    Break("an-error-page-is-no-refusal", "mcpbrowser/session/network_policy.py",
          "return self.refusals() > refusals_before", "return True",
          "A broken link is no refusal of the domain policy: only a refused host's page or tunnel is.",
          "docs/safety.md", ("tests/test_security.py::test_allowlist_is_enforced_on_every_route",)),
    Break("a-routes-abort-named", "mcpbrowser/tools/navigation.py",
          'aborted = "ERR_BLOCKED_BY_CLIENT" in reason and', 'aborted = False and',
          "A navigation a session's own route aborts says so.", "docs/tools.md",
          ("tests/test_routes.py::test_a_blocked_image_is_not_loaded",)),
    Break("page-tools-of-a-refused-page", "mcpbrowser/session/page_tools.py",
          "if frame is page.main_frame and state.network_policy.forbids_page(frame.url):",
          "if frame is page.main_frame and False:",
          "A tab showing a refused host's page offers no page tools: DOMAIN_NOT_ALLOWED, not a frame left out.",
          "docs/tools.md", ("tests/test_page_tools.py::test_a_page_tool_that_navigates_says_so_as_an_action_does",)),
    Break("page-tools-past-fifty-told", "mcpbrowser/tools/page_tools.py",
          "if len(found) > MAX_LISTED:  # the rest", "if False:  # the rest",
          "A page tools list past 50 says how many more; get_content reads them all.", "docs/tools.md",
          ("tests/test_page_tools.py::test_a_list_past_fifty_says_how_many_more_and_the_call_keeps_them_all",)),
    Break("route-does-one-thing", "mcpbrowser/tools/network.py",
          "if len(does) != 1:", "if False:",
          "A route answers, aborts or sends on with requestHeaders: one of them.", "docs/tools.md", (ROUTE_MISTAKES,)),
    Break("route-url-that-matches-nothing", "mcpbrowser/tools/network.py",
          'if "*" not in args["url"] and "://" not in args["url"]:', "if False:",
          "A route's url is a glob against whole URLs: a bare path is refused, naming the glob.", "docs/tools.md",
          (ROUTE_MISTAKES,)),
    Break("page-tool-required-input", "mcpbrowser/tools/page_tools.py",
          "if missing:  # the page's own schema", "if False:  # the page's own schema",
          "A page tool called without an input its schema requires says what to give.", "docs/tools.md",
          (PT_MISTAKES,)),
    Break("page-tool-required-names-are-identifiers", "mcpbrowser/tools/page_tools.py",
          'named = [k for k in missing if isinstance(k, str) and page_tools.IDENTIFIER.fullmatch(k)]',
          "named = [str(k) for k in missing]",
          "Text a page writes is the page's: our error names a required field only when it is an identifier.",
          "docs/tools.md", (PT_MISTAKES,)),
    Break("page-tool-frame-hint", "mcpbrowser/tools/page_tools.py",
          "if framed else", "if False else",
          "A frame's tool called without its frame says which frame to pass.", "docs/tools.md", (PT_MISTAKES,)),
    Break("page-tool-frames-listed", "mcpbrowser/session/page_tools.py",
          "it has: {clip(', '.join(origins)) or 'none'}", "it has: ?",
          "A frame named wrongly: the answer lists the frames' origins.", "docs/tools.md", (PT_MISTAKES,)),
    Break("measured-interaction-gets-the-find-grace", "mcpbrowser/tools/performance.py",
          'if "timeout" in args:  # the agent', 'if True:  # the agent',
          "A missing element is ELEMENT_NOT_FOUND after a 1 s grace (a measurement's interaction too).",
          "docs/tools.md",
          ("tests/test_memory_leaks.py::test_a_missing_element_fails_after_a_clicks_grace_not_the_whole_timeout",)),
    Break("page-tool-answer-is-an-actions", "mcpbrowser/tools/page_tools.py",
          'out = {"tool": name}  # the call', 'out = {"tool": name, "url": state.tab.page.url}  # the call',
          "page_tools calls one as an action: url, title and navigated as a click's.", "docs/tools.md",
          ("tests/test_page_tools.py::test_a_page_tool_that_navigates_says_so_as_an_action_does",)),
    Break("page-tool-navigation-not-a-failure", "mcpbrowser/tools/page_tools.py",
          'if tab.navigations != navigations or "context was destroyed" in text:', "if False:",
          "A page tool that sent its page to a forbidden host answers DOMAIN_NOT_ALLOWED, as a click.",
          "docs/safety.md", ("tests/test_page_tools.py::test_a_page_tool_that_navigates_says_so_as_an_action_does",)),
    Break("storage-of-a-forbidden-origin-refused", "mcpbrowser/tools/storage.py",
          "if state.network_policy.forbids_page(state.tab.page.url):", "if False:",
          "storage: the current page's origin, within the domain policy.", "docs/tools.md", (STORAGE,)),
    Break("storage-list-capped", "mcpbrowser/tools/storage.py",
          "named) for i in items[:MAX_ENTRIES]]", "named) for i in items]",
          "A storage list shows 200 entries at most and says how many more.", "docs/tools.md", (STORAGE,)),
    Break("storage-listed-names-cut", "mcpbrowser/tools/storage.py",
          'i["name"] if named else clip(i["name"], VALUE_CHARS)', 'i["name"]',
          "A listed name past 500 characters is cut too.", "docs/tools.md", (STORAGE,)),
    Break("storage-listed-values-cut", "mcpbrowser/tools/storage.py",
          'return entry if asked else {**entry, "value": clip(value, VALUE_CHARS)}', "return entry",
          "A listed value past 500 characters is cut (named, whole).", "docs/tools.md", (STORAGE,)),
    Break("cookie-defaults-left-out", "mcpbrowser/tools/storage.py",
          "COOKIE_DEFAULTS.get(k, ...) != c[k]", "True",
          "A listed cookie leaves out what is the default.", "docs/tools.md", (COOKIE_SET,)),
    Break("cookie-expires-in-milliseconds-refused", "mcpbrowser/tools/storage.py",
          'if args.get("expires", 0) > 1e11:', "if False:",
          "A cookie's expires is seconds; milliseconds are refused saying so.", "docs/tools.md", (COOKIE_SET,)),
    Break("cookie-path-with-the-pages-host", "mcpbrowser/tools/storage.py",
          'if "path" in cookie:  # the browser', 'if False:  # the browser',
          "A cookie set with a path and no domain is the current page's host's.", "docs/tools.md", (COOKIE_SET,)),
    Break("an-action-sent-to-a-forbidden-host-is-refused", "mcpbrowser/session/state.py",
          "if navigated and self.tab is tab and self.network_policy.shows_refusal(", "if False and (",
          "A navigation that is refused answers DOMAIN_NOT_ALLOWED; so does an action that sent the tab there.",
          "docs/safety.md", ("tests/test_security.py::test_allowlist_is_enforced_on_every_route",)),
    Break("urlchanged-only-when-the-url-changed", "mcpbrowser/session/state.py",
          "if not navigated and tab.page.url != url_before:", "if not navigated and tab.page.url == tab.page.url:",
          "A same-document URL change answers navigated: false, urlChanged: true; one to the URL it was at, neither.",
          "docs/tools.md",
          ("tests/test_single_page_apps.py::test_a_same_document_url_change_is_urlchanged_not_navigated_and_refs_"
           "stay",)),
    # -- a fifth hunt's (helper-50, 2026-12-07): new tabs by forms, the private block, routes, cookies, short secrets --
    Break("popup-form-target", "mcpbrowser/session/settle.py",
          "if (elsewhere(via || e.target.target || baseTarget())) asked(e);",
          "if (elsewhere(via || baseTarget())) asked(e);",
          "An action's answer says how many tabs it opened: a form that targets a new window opens one.",
          "docs/tools.md", (POPUPS,)),
    Break("popup-formtarget", "mcpbrowser/session/settle.py",
          'const via = e.submitter && e.submitter.getAttribute("formtarget");', "const via = null;",
          "An action's answer says how many tabs it opened: a button's formtarget aims its form at one.",
          "docs/tools.md", (POPUPS,)),
    Break("popup-form-base-target", "mcpbrowser/session/settle.py",
          "if (elsewhere(via || e.target.target || baseTarget())) asked(e);",
          "if (elsewhere(via || e.target.target)) asked(e);",
          "An action's answer says how many tabs it opened: a page's <base target> aims its forms at one.",
          "docs/tools.md", (POPUPS,)),
    Break("popup-link-base-target", "mcpbrowser/session/settle.py",
          "if (elsewhere(targetOf(a) || baseTarget()) || e.ctrlKey", "if (elsewhere(targetOf(a)) || e.ctrlKey",
          "An action's answer says how many tabs it opened: a page's <base target> aims its links at one.",
          "docs/tools.md", (POPUPS,)),
    Break("svg-link-opens-no-tab", "mcpbrowser/session/settle.py",
          'const targetOf = (node) => Reflect.apply(getAttribute, node, ["target"]);',
          "const targetOf = (node) => node.target;",
          "An action that opened no tab waits for none (an SVG link's target is no string).", "docs/tools.md",
          ("tests/test_tools.py::test_an_svg_link_to_its_own_page_waits_for_no_tab",)),
    Break("short-secret-known-to-the-client", "mcpbrowser/session/snapshots.py",
          "    state.secrets.add_short(v for v in values if len(v) < MIN_SCRUBBED)", "    pass",
          "A trace's action parameters and results that are exactly a shorter secret its client met (in any of its "
          "sessions) lose them.", "docs/safety.md",
          ("tests/test_secrets.py::test_a_trace_keeps_no_secret_and_still_opens",)),
    Break("private-block-not-by-wildcard", "mcpbrowser/core/policy_proxy.py",
          "if self.policy.block_private and not self.policy.names(host):",
          "if self.policy.block_private and not (self.policy.allowed or self.policy.names(host)):",
          "--block-private-networks: a name that came in by a wildcard may not reach a private address.",
          "docs/safety.md", (PRIVATE,)),
    Break("private-block-every-address", "mcpbrowser/core/policy_proxy.py",
          "private = [info[4][0] for info in infos if", "private = [info[4][0] for info in infos[-1:] if",
          "The proxy checks the address it then connects to, whichever of a name's addresses that is.",
          "docs/safety.md", (PRIVATE,)),
    Break("metadata-every-address", "mcpbrowser/core/policy_proxy.py",
          "metadata = [info[4][0] for info in infos if", "metadata = [info[4][0] for info in infos[-1:] if",
          "Cloud metadata services are always refused, whatever names them (a name with another address too).",
          "docs/safety.md", (PRIVATE,)),
    Break("refusal-names-its-own-host", "mcpbrowser/session/network_policy.py",
          "        if not self.refused(url):", "        if True:",
          "A navigation the proxy refused is DOMAIN_NOT_ALLOWED naming its own host, not a late refusal's.",
          "docs/safety.md",
          ("tests/test_policy.py::test_a_navigations_refusal_names_its_own_host_else_the_proxys_latest",)),
    Break("refused-tunnel-is-domain-not-allowed", "mcpbrowser/session/network_policy.py",
          "        return self.proxy.refusals if self.proxy is not None else 0", "        return 0",
          "Every request passes the proxy, each hop of a redirect chain (one to https too): DOMAIN_NOT_ALLOWED.",
          "docs/safety.md", ("tests/test_security.py::test_allowlist_is_enforced_on_every_route",)),
    Break("route-same-pattern-replaced", "mcpbrowser/session/routes.py",
          "        self.remove(pattern)", "        pass",
          "A pattern routed again is replaced.", "docs/tools.md",
          ("tests/test_routes.py::test_a_pattern_routed_again_is_replaced_and_unroute_leaves_none_of_it",)),
    Break("cookie-set-httponly-is-secret", "mcpbrowser/tools/storage.py",
          '_plain_or_secret(state, response, args["value"], _is_secret(args["name"], args.get("httpOnly")))',
          '_plain_or_secret(state, response, args["value"], _is_secret(args["name"]))',
          "An HttpOnly cookie holds a login: a secret, whatever its name (one the agent sets too).", "docs/safety.md",
          (COOKIES,)),
    Break("cookies-masked-unless-named", "mcpbrowser/tools/storage.py",
          '_is_secret(c["name"], c.get("httpOnly")), "name" in args)',
          '_is_secret(c["name"], c.get("httpOnly")), bool(args.keys() & {"name", "domain", "path"}))',
          "HttpOnly cookies and names like a session's or a token's are secrets: masked unless named.",
          "docs/tools.md", (COOKIES,)),
    # -- a sixth hunt's (helper-51, 2026-12-07): protocol params, settings' bounds, errors, library, reports ---------
    Break("initialize-client-info-object", "mcpbrowser/transports/protocol.py",
          'for name in ("capabilities", "clientInfo"):', 'for name in ("capabilities",):',
          "initialize's params are checked by hand: capabilities and clientInfo must be objects (-32602).",
          "docs/protocol.md", (KERNEL_PARAMS,)),
    Break("initialize-handshake-versions-only", "mcpbrowser/transports/protocol.py",
          "return version if version in HANDSHAKE_VERSIONS else LATEST_VERSION",
          "return version if version in SUPPORTED_VERSIONS else LATEST_VERSION",
          "initialize settles a handshake-era version; any other is answered with 2025-11-25.", "docs/protocol.md",
          (KERNEL_PARAMS,)),
    Break("tools-list-meta-object", "mcpbrowser/transports/protocol.py",
          '    if "_meta" in params and not isinstance(params["_meta"], dict):', "    if False:",
          "tools/list's params are checked by hand: a _meta that is not an object is -32602.", "docs/protocol.md",
          (KERNEL_PARAMS,)),
    Break("unsupported-version-lists-supported", "mcpbrowser/transports/protocol.py",
          '{"supported": list(MODERN_VERSIONS), "requested": version})', "None)",
          "An unsupported version in _meta is -32022 with the supported list.", "docs/protocol.md",
          (KERNEL_PARAMS,)),
    Break("switch-yes-on", "mcpbrowser/config.py",
          'if text in ("1", "true", "yes", "on"):', 'if text in ("1", "true"):',
          "A switch's value may be 1, true, yes or on (and 0, false, no, off).", "docs/configuration.md",
          (BOUNDS,)),
    Break("max-message-bytes-at-least-1024", "mcpbrowser/config.py",
          '4 * 1024 * 1024, _int_at_least(1024), "Longest', '4 * 1024 * 1024, _int_at_least(1), "Longest',
          "--max-message-bytes is at least 1024; a smaller one is refused, naming the flag.",
          "docs/configuration.md", (BOUNDS,)),
    Break("http-port-at-most-65535", "mcpbrowser/config.py",
          "not 0 <= int(port) <= 65535:", "not 0 <= int(port):",
          "--http HOST:PORT: a port past 65535 is refused, naming the flag.", "docs/configuration.md", (BOUNDS,)),
    Break("http-token-sixteen-chars", "mcpbrowser/config.py",
          'if ":" not in pair or len(pair.split(":", 1)[1].strip()) < MIN_TOKEN_CHARS:',
          'if ":" not in pair or len(pair.split(":", 1)[1].strip()) < 8:',
          "--http-tokens: each token is 16 characters or more.", "docs/http.md", (BOUNDS,)),
    Break("quota-is-disk-full", "mcpbrowser/errors.py",
          'if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):',
          'if getattr(exc, "errno", None) in (errno.ENOSPC,):',
          "DISK_FULL: nothing was saved for want of space, a full quota (EDQUOT) as a full disk.",
          "docs/reference/errors.md", (QUOTA,)),
    Break("retry-after-is-a-number", "mcpbrowser/errors.py",
          "return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None",
          "return int(value) if isinstance(value, (int, float)) else None",
          "A Retryable error's retry_after_ms is the milliseconds its details gave, None when unknown.",
          "docs/library.md", (QUOTA,)),
    Break("library-expiry-renewed", "mcpbrowser/library.py",
          'self.expires_at = result.get("expiresAt", self.expires_at)', "pass",
          "Each call renews the session: Session.expires_at is what the last answer's expiresAt said.",
          "docs/library.md",
          ("tests/test_library_api.py::test_a_sessions_expiry_is_the_one_its_last_answer_gave",)),
    Break("history-without-image", "mcpbrowser/core/answer.py",
          'kept = {k: v for k, v in for_library(outcome).items() if k != "image"}', "kept = dict(for_library(outcome))",
          "The history keeps a screenshot's answer without its image (the image is a file of its own).",
          "docs/history.md",
          ("tests/test_outcome.py::test_the_history_keeps_a_screenshots_answer_without_its_image_and_the_agent_"
           "gets_it_as_an_image",)),
    Break("memory-more-leaks-counted", "mcpbrowser/memory_report.py",
          "        if len(leaks) > SHOWN:", "        if len(leaks) > SHOWN + 1:",
          "measure_memory names five leaks and says how many more get_content has.",
          "docs/performance-insights.md", (LEAK_WORDS,)),
    Break("memory-layout-shift-not-a-leak", "mcpbrowser/memory_report.py",
          'key[1].endswith("ContentfulPaint") or key[1] == "LayoutShift"', 'key[1].endswith("ContentfulPaint")',
          "The browser's performance timeline entries are its own bounded buffers, never the page's leak.",
          "docs/performance-insights.md", (LEAK_WORDS,)),
    Break("memory-compare-other-interaction", "mcpbrowser/memory_report.py",
          'if (before["url"], before["interaction"]) != (after["url"], after["interaction"]):',
          'if before["url"] != after["url"]:',
          "compare_performance of two memory runs says when they measured different interactions.",
          "docs/performance-insights.md", (LEAK_WORDS,)),
    Break("heap-weak-edges-hold-nothing", "mcpbrowser/heap_snapshot.py",
          "                if edges[edge] == weak:", "                if False:",
          "A leak's holder is found along strong references: a weak one holds nothing.",
          "docs/performance-insights.md", (HOLDERS,)),
    Break("heap-long-path-cut", "mcpbrowser/heap_snapshot.py",
          "    if len(words) > 200:", "    if False:",
          "A holder's path is said in at most about 200 characters, cut in the middle.",
          "docs/performance-insights.md", (HOLDERS,)),
    Break("perf-median-load", "mcpbrowser/perf_report.py",
          "chosen = by_lcp[(len(by_lcp) - 1) // 2]", "chosen = by_lcp[-1]",
          "With runs, the causes are the median load's (by LCP).", "docs/performance-insights.md", (PERF_MEDIAN,)),
    Break("perf-spread", "mcpbrowser/perf_report.py",
          'metrics[name]["spread"] = [min(values), max(values)]', "pass",
          "With runs, each metric is the median with its spread.", "docs/performance-insights.md", (PERF_MEDIAN,)),
    Break("perf-site-country-code", "mcpbrowser/perf_report.py",
          "keep = 3 if len(labels) > 2 and len(labels[-1]) == 2 and len(labels[-2]) <= 3 else 2", "keep = 2",
          "Third parties by site: example.co.uk is one site, not co.uk.", "docs/performance-insights.md",
          (PERF_CAUSES,)),
    Break("perf-favicon-not-the-pages", "mcpbrowser/perf_report.py",
          'if not (r.get("type") == "other" and urlsplit(r["url"]).path == "/favicon.ico")),', "if True),",
          "The browser's own favicon request is not the page's.", "docs/performance-insights.md", (PERF_CAUSES,)),
    Break("perf-render-blocking-before-fcp", "mcpbrowser/perf_report.py",
          'if r.get("blocking") == "blocking" and r["start"] < fcp_at]', 'if r.get("blocking") == "blocking"]',
          "Render-blocking: what blocked the first paint, not what a page loaded after it.",
          "docs/performance-insights.md", (PERF_CAUSES,)),
    Break("perf-noise-is-the-spread", "mcpbrowser/perf_report.py",
          "return max([floor, *spreads])", "return floor",
          "compare_performance: a change within either run's spread is noise.", "docs/performance-insights.md",
          (PERF_COMPARE,)),
    Break("perf-throttle-not-alike", "mcpbrowser/perf_report.py",
          '    if before.get("throttle") != after.get("throttle"):', "    if False:",
          "compare_performance says when two runs were throttled differently.", "docs/performance-insights.md",
          (PERF_COMPARE,)),
    # -- a fourth hunt's (helper-49, 2026-12-07): the warm pool's refill, a trace's scrub ----------------------------
    Break("pool-no-refill-over-memory", "mcpbrowser/core/warm_pool.py",
          "if self._memory.over() is not None or self._registry.closed", "if self._registry.closed",
          "The memory guard refuses new sessions over the limit, and stops refilling the warm pool.",
          "docs/reliability.md",
          ("tests/test_pool.py::test_the_pool_is_not_refilled_over_the_memory_limit_nor_while_degraded",)),
    Break("pool-no-refill-degraded", "mcpbrowser/core/warm_pool.py",
          "self._registry.closed or self._supervisor.degraded", "self._registry.closed or False",
          "Past the restart budget the server is degraded: no session opens, so none is kept warm.",
          "docs/reliability.md",
          ("tests/test_pool.py::test_the_pool_is_not_refilled_over_the_memory_limit_nor_while_degraded",)),
    Break("trace-marked-field-hidden", "mcpbrowser/trace_scrub.py",
          "or SECRET_MARK in attrs:", ":",
          "A trace's DOM snapshots hide secret fields' values (a field the server marked secret too).",
          "docs/safety.md",
          ("tests/test_secret_units.py::test_a_trace_hides_a_field_the_server_marked_secret_and_a_short_secret_in_"
           "any_value_line",)),
    Break("trace-spinbutton-short", "mcpbrowser/trace_scrub.py",
          'if "box" in value or "spinbutton" in value else value', 'if "box" in value else value',
          "A trace hides a shorter secret where it stands alone: a snapshot's spinbutton line as a textbox's.",
          "docs/safety.md",
          ("tests/test_secret_units.py::test_a_trace_hides_a_field_the_server_marked_secret_and_a_short_secret_in_"
           "any_value_line",)),
    # -- a third hunt's (helper-48, 2026-12-07): the proxy, the breaker, the downloads' check ----------------------
    Break("proxy-connects-to-the-checked-address", "mcpbrowser/core/policy_proxy.py",
          "            return infos[0][4]", "            return (host, port)",
          "The proxy checks the address it then connects to: a name that re-resolves (DNS rebinding) is refused.",
          "docs/safety.md",
          ("tests/test_policy.py::test_the_proxy_connects_to_the_address_it_checked_not_to_the_name_again",)),
    Break("breaker-success-resets", "mcpbrowser/core/dispatch.py",
          "                self.breaker.succeeded(call.tool)", "                pass",
          "CIRCUIT_OPEN after --breaker-threshold BROWSER_ERROR failures in a row (a success starts the count again).",
          "docs/reliability.md", (BREAKER,)),
    Break("breaker-reset-honoured", "mcpbrowser/core/dispatch.py",
          "CircuitBreaker(config.breaker_threshold, config.breaker_reset)",
          "CircuitBreaker(config.breaker_threshold, 60)",
          "The circuit stays open for --breaker-reset seconds.", "docs/reliability.md", (BREAKER,)),
    Break("download-refused-by-policy", "mcpbrowser/session/network_policy.py",
          "        return not self.policy.allows(inner) or self.refused(inner)",
          "        return not self.policy.allows(inner)",
          "A download is saved within the domain policy (the proxy's refusals count).", "docs/tools.md",
          ("tests/test_policy.py::test_a_download_is_refused_by_the_policy_or_by_the_proxy_having_refused_its_host",)),
    # -- a second hunt's (helper-47, 2026-12-07): history, saved logins, downloads, the view, HTTP, groups, export --
    Break("groups-per-client", "mcpbrowser/core/tool_groups.py",
          "return self._server | self._enabled.get(owner, set())",
          "return self._server.union(*self._enabled.values())",
          "enable_tools turns groups on for its own client only.", "docs/tools.md",
          ("tests/test_tool_groups.py::test_a_group_a_client_enables_is_on_for_that_client_only",)),
    Break("view-input-only-the-holder", "mcpbrowser/view/hands.py",
          'if (self.core.session(session_id) or {}).get("heldBy") != viewer.name:',
          'if (self.core.session(session_id) or {}).get("heldBy") is None:',
          "While a person holds a session nobody else drives it, an operator included.", "docs/view.md",
          ("tests/test_view_units.py::test_only_the_person_holding_a_session_sends_it_input",)),
    Break("save-state-same-name-replaces", "mcpbrowser/core/history.py",
          '"VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner, name) DO UPDATE SET "',
          '"VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner, name) DO NOTHING -- "',
          "save_state: the same name replaces.", "docs/tools.md",
          ("tests/test_store.py::test_a_login_saved_again_under_its_name_replaces_the_old_one_for_that_client_only",)),
    Break("diff-cursor-per-session", "mcpbrowser/core/history.py",
          "else 'r.session_id = ?'} ", "else 'r.session_id = ? OR TRUE'} ",
          "A read is a diff against the snapshot you last read in that session.", "docs/history.md", (DIFFS,)),
    Break("search-leaves-the-cursor", "mcpbrowser/core/content_tools.py",
          'content, matches = _search(lines, args["search_for"])',
          'content, matches = _search(lines, args["search_for"]); core.history.mark_read(ref_id, len(lines), digest)',
          "search_for leaves the cursor alone.", "docs/history.md", (DIFFS,)),
    Break("search-any-case", "mcpbrowser/core/content_tools.py", "needle = term.lower()", "needle = term",
          "search_for finds lines that hold its text in any case.", "docs/history.md", (DIFFS,)),
    Break("diff-over-half-is-the-page", "mcpbrowser/core/content_tools.py",
          "if len(content) * 2 > len(text):", "if len(content) > len(text):",
          "A diff longer than half the page is the page itself (mode full).", "docs/history.md", (DIFFS,)),
    Break("added-lines-keep-refs", "mcpbrowser/core/content_tools.py",
          'out += ["+" + line for line in new[b1:b2]]', 'out += ["+" + REF.sub("", line) for line in new[b1:b2]]',
          "A diff's added lines keep their refs, to act on them.", "docs/history.md", (DIFFS,)),
    Break("download-names-numbered", "mcpbrowser/session/downloads.py",
          "-{len(self.entries)}-{safe or 'download'}\"", "-{safe or 'download'}\"",
          "A download's name carries its number: two of one name are two files.", "docs/tools.md",
          ("tests/test_downloads.py::test_downloads_within_the_limit_are_saved_and_the_browsers_copies_go",)),
    Break("orphan-pages-pruned", "mcpbrowser/core/store.py",
          'conn.execute("DELETE FROM snapshots WHERE hash NOT IN "',
          'conn.execute("SELECT 1 FROM snapshots WHERE hash NOT IN "',
          "Retention drops the oldest history, the pages only it kept with it.", "docs/history.md",
          (PRUNING,)),
    Break("prune-every-thousand-writes", "mcpbrowser/core/store.py",
          "if writes >= 1000 and self.fault is None:", "if writes >= 10**9 and self.fault is None:",
          "Pruning runs at start and then every 1000 writes.", "docs/history.md",
          (PRUNING,)),
    Break("body-of-exactly-the-limit", "mcpbrowser/transports/http.py",
          "return 413 if len(body) > self.max_body_bytes else body",
          "return 413 if len(body) >= self.max_body_bytes else body",
          "A message may be at most --max-message-bytes bytes (that many are read).", "docs/http.md",
          ("tests/test_http_units.py::test_a_body_of_exactly_the_limit_is_read_and_one_byte_more_is_413",)),
    Break("export-nth-in-its-frame", "mcpbrowser/core/script_export.py",
          "scope = [e for e in elements if e.frames == mine.frames]", "scope = elements",
          "A locator's .nth(i) counts the elements of its own frame.", "docs/export.md", (LOCATORS,)),
    Break("export-exact-any-case", "mcpbrowser/core/script_export.py",
          "mine.name.lower() in e.name.lower()", "mine.name in e.name",
          "exact=True where another name contains this one, as get_by_role matches (any case).", "docs/export.md",
          (LOCATORS,)),
    Break("export-expect-5000", "mcpbrowser/core/script_export.py",
          '"{EXPECT_ENV}", "5000"', '"{EXPECT_ENV}", "30000"',
          "Every expect waits MCPBROWSER_EXPECT_TIMEOUT ms, 5000 by default.", "docs/export.md",
          ("tests/test_script_export_units.py::test_every_expect_waits_5000_ms_unless_the_environment_says_otherwise",)),
    # -- an outside mutation hunt's twelve (helper-45, 2026-12-07): breaks no test noticed, each test since seen
    # failing with its break ----------------------------------------------------------------------------------
    Break("plain-name-is-only-itself", "mcpbrowser/domains.py",
          "    return host == pattern", "    return host.endswith(pattern)",
          "A plain name matches itself only (example.com is not evilexample.com).", "docs/safety.md",
          ("tests/test_policy.py::test_a_wildcard_does_not_match_a_look_alike_host",)),
    Break("private-means-non-global", "mcpbrowser/domains.py",
          "    return not ip.is_global or ip.is_multicast", "    return ip.is_private",
          "--block-private-networks refuses loopback, private, link-local and other non-public addresses.",
          "docs/safety.md",
          ("tests/test_policy.py::test_block_private_networks_refuses_every_address_that_is_not_public",)),
    Break("upload-dir-sibling-prefix", "mcpbrowser/tools/interaction.py",
          "        if os.path.commonpath([real, root]) == root:", "        if real.startswith(root):",
          "upload_file works only for files under the --upload-dir directories.", "docs/tools.md",
          ("tests/test_tool_surface.py::test_upload_file_only_from_allowed_dirs",)),
    Break("upload-dir-symlink", "mcpbrowser/tools/interaction.py",
          "    real = os.path.realpath(path)", "    real = os.path.abspath(path)",
          "upload_file works only for files under the --upload-dir directories (a link out of one too).",
          "docs/tools.md", ("tests/test_tool_surface.py::test_upload_file_only_from_allowed_dirs",)),
    Break("view-sign-in-expires", "mcpbrowser/view/auth.py",
          "            if found is not None and found[2] < time.monotonic():", "            if False:",
          "A view sign-in is kept on the server for 12 hours, then its cookie signs no one in.", "docs/view.md",
          ("tests/test_view_units.py::test_a_sign_in_ends_after_its_hours_and_a_stolen_cookie_with_it",)),
    Break("four-char-secret-scrubbed", "mcpbrowser/session/snapshots.py",
          "    return {form for v in values if v and len(v) >= MIN_SCRUBBED",
          "    return {form for v in values if v and len(v) > MIN_SCRUBBED",
          "Every secret value of 4 characters or more is scrubbed from every later answer.", "docs/safety.md",
          ("tests/test_secret_units.py::test_a_secret_of_four_characters_is_scrubbed_in_every_form_and_a_shorter_one_"
           "is_not",)),
    Break("httponly-cookie-is-secret", "mcpbrowser/tools/storage.py",
          "    return bool(http_only) or SECRET_NAME.search(name) is not None",
          "    return SECRET_NAME.search(name) is not None",
          "An HttpOnly cookie holds a login: a secret, masked in lists, whatever its name.", "docs/safety.md",
          ("tests/test_cookies_storage.py::test_a_secret_cookie_never_in_an_answer_the_history_or_a_log",)),
    Break("cc-csc-is-a-secret-field", "mcpbrowser/redaction.py",
          '"one-time-code", "cc-number", "cc-csc", "cc-exp",', '"one-time-code", "cc-number", "cc-exp",',
          "A field whose autocomplete is a card's security code (cc-csc) is a secret field.", "docs/safety.md",
          ("tests/test_page_attacks.py::test_every_autocomplete_token_the_manual_names_makes_a_secret_field",)),
    Break("rate-limit-per-client", "mcpbrowser/core/dispatch.py",
          'retry = self.rate.check((caller.name or "library", session_id or "-", name))',
          'retry = self.rate.check(("library", session_id or "-", name))',
          "--rate-limit N allows N calls a minute per client, session and tool: per client.", "docs/safety.md",
          ("tests/test_threads.py::test_the_rate_limit_counts_each_client_session_and_tool_apart",)),
    Break("rate-limit-per-session", "mcpbrowser/core/dispatch.py",
          'retry = self.rate.check((caller.name or "library", session_id or "-", name))',
          'retry = self.rate.check((caller.name or "library", "-", name))',
          "--rate-limit N allows N calls a minute per client, session and tool: per session.", "docs/safety.md",
          ("tests/test_threads.py::test_the_rate_limit_counts_each_client_session_and_tool_apart",)),
    Break("idle-http-client-forgotten", "mcpbrowser/transports/http.py",
          "        cutoff = time.monotonic() - CLIENT_IDLE_S", '        cutoff = float("-inf")',
          "An Mcp-Session-Id acts as its client until it ends or idles out for an hour.", "docs/http.md",
          ("tests/test_http_units.py::test_a_handshake_era_client_unheard_of_for_its_idle_time_is_forgotten",)),
    Break("tab-switch-is-navigated", "mcpbrowser/session/state.py",
          "            navigated = self.tab is not tab or tab.navigations != navigations_before",
          "            navigated = tab.navigations != navigations_before",
          "navigated: the agent's page is another document, another tab's included.", "docs/tools.md",
          ("tests/test_tab_dialogs.py::test_a_popups_console_and_requests_are_its_tabs_and_go_with_it",)),
    # -- the outside audit's twelve (issue 70) ---------------------------------------------------------------
    Break("http-session-id-owner", "mcpbrowser/transports/http.py",
          "if client is None or client.token_client != name:", "if client is None:",
          "An Mcp-Session-Id belongs to the token that opened it: another token presenting it gets what an "
          "unknown id gets.", "docs/http.md",
          ("tests/test_http.py::test_an_mcp_session_id_belongs_to_the_token_that_opened_it",)),
    Break("view-csrf", "mcpbrowser/view/app.py",
          "            if not auth.same_origin(environ, self.trust_proxy) or not mine:",
          "            if not auth.same_origin(environ, self.trust_proxy):",
          "Every request that changes something must carry the page's CSRF token.", "docs/view.md",
          ("tests/test_view.py::test_post_without_csrf_or_from_another_origin_is_refused_and_does_nothing",)),
    Break("view-origin", "mcpbrowser/view/app.py",
          "            if not auth.same_origin(environ, self.trust_proxy) or not mine:",
          "            if not mine:",
          "Every request that changes something must come from the view's own origin.", "docs/view.md",
          ("tests/test_view.py::test_post_without_csrf_or_from_another_origin_is_refused_and_does_nothing",)),
    Break("news-scrubbed", "mcpbrowser/core/answer.py",
          "    return Outcome(call.ref_id, scrub_value(result, secrets), None,",
          "    return Outcome(call.ref_id, result, None,",
          "A secret stays known: scrubbed from every later answer, the page's news (a dialog's text, a download's "
          "name) too.", "docs/safety.md",
          ("tests/test_page_attacks.py::test_dialogs_that_quote_a_secret_hide_it",)),
    Break("request-row-after-field", "mcpbrowser/core/dispatch.py",
          "            call.record_request = lambda: self._recorder.request(call, args)",
          "            call.secret = False; self._recorder.request(call, args)",
          "The request row is written only after the field was looked at, so the clear text never reaches the "
          "database or its WAL.", "docs/safety.md",
          ("tests/test_secrets.py::test_secret_values_never_leave_the_page",)),
    Break("wildcard-subdomains-only", "mcpbrowser/domains.py",
          "return host.endswith(pattern[1:])", "return host.endswith(pattern[2:])",
          "`*.example.com` matches its subdomains, not a host that merely ends in its letters.", "docs/safety.md",
          ("tests/test_policy.py::test_a_wildcard_does_not_match_a_look_alike_host",)),
    Break("resume-claim", "mcpbrowser/core/store_sqlite.py",
          "\"WHERE session_id = ? AND state = ? AND instance IS ?\")",
          "\"WHERE session_id = ? AND (state = ? OR 1) AND (instance IS ? OR 1)\")",
          "One live copy: a session is resumed by one server, decided by a conditional UPDATE.", "docs/history.md",
          ("tests/test_store.py::test_of_two_servers_resuming_a_dead_servers_sessions_at_once_exactly_one_wins_each",
           "tests/test_store.py::test_two_servers_claiming_a_dead_servers_session_on_one_read_of_it_give_one_winner")),
    Break("blocked-host-not-asked", "mcpbrowser/session/network_policy.py",
          "            if self.policy.blocks(host):", "            if False:",
          "A host in --blocked-domains is refused without asking the person (no yes lets it through).",
          "docs/safety.md",
          ("tests/test_security.py::test_a_blocked_host_is_refused_without_asking_the_person",)),
    Break("resume-owner", "mcpbrowser/core/dispatch.py",
          "if call.owner is not None and session_id is not None and self._registry.owner_of(session_id) != call.owner:",
          "if tool.needs_session and call.owner is not None and session_id is not None and "
          "self._registry.owner_of(session_id) != call.owner:",
          "Another client's session answers as one that does not exist, to resume_session too.", "docs/http.md",
          ("tests/test_http.py::test_clients_at_once_each_with_their_own_sessions",)),
    Break("sessionless-refid-owner", "mcpbrowser/core/content_tools.py",
          "        if owner != call.owner:", "        if owner != call.owner and stored[\"sessionId\"] is not None:",
          "Every call's refId reads back for the client that got it, session-less calls too; for another client "
          "it answers as one never handed out.", "docs/history.md",
          ("tests/test_history.py::test_every_refid_handed_out_reads_back_for_its_client_and_as_never_handed_out_for_another",)),
    Break("bug-is-internal-error", "mcpbrowser/errors.py",
          "return InternalError(bug=exc, details={\"exception\": type(exc).__name__})",
          "return BrowserError(f\"{type(exc).__name__}: {exc}\")",
          "A bug in the server's own code is INTERNAL_ERROR, its traceback in the log, and never trips the "
          "circuit breaker.", "docs/reliability.md",
          ("tests/test_mcp_kernel.py::test_a_bug_of_ours_in_a_tool_is_an_internal_error_logged_with_its_traceback_and_never_trips_the_breaker",)),
    Break("cooldown-owner", "mcpbrowser/core/user_channel.py",
          "owner = None if call is None else call.owner", "owner = None",
          "Cooldown scope `client`: over HTTP a client is its token; one client's wall pauses nobody else.",
          "docs/safety.md",
          ("tests/test_cooldown.py::test_over_http_one_clients_wall_never_pauses_another",)),
    Break("typed-capture-proof", "mcpbrowser/session/page_watch.py",
          "list.includes(field) && hash(field.value) === Number(want) && !reactive(roots);",
          "list.includes(field) && !reactive(roots);",
          "A type's capture is edited, not walked, only when one check proves the field holds exactly the text "
          "typed and nothing else changed.", "docs/history.md",
          ("tests/test_capture_edit.py::test_a_page_that_does_more_than_take_the_value_is_walked[upper]",)),
    Break("editor-capture-elsewhere", "mcpbrowser/session/page_watch.py",
          "if (!host || (w.host && w.host !== host) || (r.type === 'attributes' &&",
          "if ((r.type === 'attributes' &&",
          "A type into an editor is captured as an edit only when its content and the focus are all that changed: "
          "a change outside the editor walks.", "docs/history.md",
          ("tests/test_capture_edit.py::test_an_editor_that_does_more_than_change_its_lines_is_walked[status]",)),
    Break("editor-capture-box-kept", "mcpbrowser/session/page_watch.py",
          "w.editors.get(e) !== box.width + ',' + box.height ||", "",
          "A type into an editor is captured as an edit only when the editor's box is the size it was.",
          "docs/history.md",
          ("tests/test_capture_edit.py::test_an_editor_that_does_more_than_change_its_lines_is_walked[grows]",)),
    Break("editor-capture-plain-lines", "mcpbrowser/session/page_watch.py",
          "if (n.tagName !== 'SPAN' || n.childNodes.length !== 1 || n.firstChild.nodeType !== 3) return null;",
          "if (n.tagName !== 'SPAN') return null;",
          "An editor's lines are rewritten only where each is plain text, plain spans of one text and line breaks.",
          "docs/history.md",
          ("tests/test_capture_edit.py::test_an_editor_that_does_more_than_change_its_lines_is_walked[nested]",)),
    Break("editor-capture-reacts", "mcpbrowser/session/page_watch.py",
          "return written && !reactive(roots, EDIT_REACTS) ?", "return written ?",
          "No style rule that shows or hides by the focus, :has() or :empty: an editor's typing then walks.",
          "docs/history.md",
          ("tests/test_capture_edit.py::test_an_editor_that_does_more_than_change_its_lines_is_walked[has]",
           "tests/test_capture_edit.py::test_an_editor_that_does_more_than_change_its_lines_is_walked[empty]")),
    Break("editor-capture-owns", "mcpbrowser/session/page_watch.py",
          "OWN_ATTRS.some(a => e.hasAttribute(a)) ||", "",
          "An editor owning elements or showing a placeholder walks.", "docs/history.md",
          ("tests/test_capture_edit.py::test_an_editor_that_does_more_than_change_its_lines_is_walked[owns]",
           "tests/test_capture_edit.py::test_an_editor_that_does_more_than_change_its_lines_is_walked[placeholder]")),
    Break("editor-capture-shown-refs", "mcpbrowser/snapshot_text.py",
          "if line_ref not in known or shown is None:", "if shown is None:",
          "An editor's line whose ref the last page did not show walks.", "docs/history.md",
          ("tests/test_capture_edit.py::test_typing_into_an_editor_is_captured_as_a_walk_reads_it[code]",)),
    Break("gzip-identity-preferred", "mcpbrowser/transports/compression.py",
          "return gzip > 0 and (identity is None or gzip >= identity)", "return gzip > 0",
          "Answers are gzipped only when the client accepts gzip at least as much as identity (RFC 9110).",
          "docs/http.md",
          ("tests/test_http_units.py::test_accept_encoding_is_read_as_rfc_9110_says",)),

    # -- docs/safety.md: domains --------------------------------------------------------------------------------
    Break("ipv4-spellings", "mcpbrowser/domains.py",
          "    number = _ipv4_number(host)", "    number = None",
          "Hosts and rules are compared in one canonical form: a rule for 127.0.0.1 also matches 2130706433, "
          "0x7f.1, 0177.0.0.1, 127.1.", "docs/safety.md",
          ("tests/test_policy.py::test_every_numeric_spelling_of_an_ipv4_address_is_that_address",)),
    Break("idna-names", "mcpbrowser/domains.py",
          "    if not host.isascii():", "    if False:",
          "IDNA names are compared as punycode: a rule for bücher.example matches xn--bcher-kva.example.",
          "docs/safety.md", ("tests/test_policy.py::test_rules_are_canonical_too",)),
    Break("blocked-only-gets-a-proxy", "mcpbrowser/domains.py",
          "return bool(self.allowed or self.blocked or self.session_allowed or self.block_private)",
          "return bool(self.allowed or self.session_allowed or self.block_private)",
          "--blocked-domains holds for every request: a session with any host rule gets the filtering proxy.",
          "docs/safety.md", ("tests/test_security.py::test_blocked_domains_win",)),
    Break("session-narrows-never-widens", "mcpbrowser/domains.py",
          "if self.allowed and not any(domain_matches(host, p) for p in self.allowed):",
          "if self.allowed and self.session_allowed is None and "
          "not any(domain_matches(host, p) for p in self.allowed):",
          "create_session {allowedDomains} narrows the lists for one session, and can never widen them.",
          "docs/safety.md", ("tests/test_security.py::test_session_narrows_but_never_widens",)),
    Break("session-list-lifts-private-block", "mcpbrowser/domains.py",
          "        return host in self.allowed", "        return host in self.allowed + (self.session_allowed or ())",
          "A session's own allowedDomains may not reach a private address under --block-private-networks; only "
          "the server's --allowed-domains may.", "docs/safety.md",
          ("tests/test_policy.py::test_a_sessions_own_allowed_domains_do_not_lift_the_private_block",)),
    Break("metadata-address-always-refused", "mcpbrowser/core/policy_proxy.py",
          "            if metadata:  # whatever names it: see METADATA_NAMES",
          "            if metadata and self.policy.block_private:",
          "Cloud metadata services are always refused in a session with any host rule, whatever names them.",
          "docs/safety.md",
          ("tests/test_policy.py::test_cloud_metadata_services_are_refused_whatever_names_them",)),
    Break("metadata-names-before-dns", "mcpbrowser/core/policy_proxy.py",
          "            if host in METADATA_NAMES:", "            if False:",
          "metadata.google.internal and metadata.goog are refused before any DNS query.", "docs/safety.md",
          ("tests/test_policy.py::test_cloud_metadata_services_are_refused_whatever_names_them",)),
    Break("url-schemes", "mcpbrowser/domains.py",
          "        return urlsplit(url).scheme.lower() in self.schemes", "        return True",
          "URL schemes: http, https, about and data by default; file and chrome must be added with --url-schemes.",
          "docs/safety.md", ("tests/test_security.py::test_schemes_need_an_explicit_flag",)),
    Break("webrtc-no-udp", "mcpbrowser/core/browser_process.py",
          "WEBRTC_UDP_FLAGS = (\"--webrtc-ip-handling-policy=disable_non_proxied_udp\",",
          "WEBRTC_UDP_FLAGS = () and (\"--webrtc-ip-handling-policy=disable_non_proxied_udp\",",
          "WebRTC sends no UDP from our browser: UDP would pass by any proxy.", "docs/safety.md",
          ("tests/test_policy_attacks.py::test_webrtc_sends_nothing_to_a_forbidden_host",)),
    Break("ask-user-decline-refuses", "mcpbrowser/core/user_channel.py",
          "        answer = client.elicit(f\"The agent wants to open {host}",
          "        answer = \"accept\" or client.elicit(f\"The agent wants to open {host}",
          "With --ask-new-domains, a navigate outside the list asks the user; decline or cancel answers "
          "DOMAIN_NOT_ALLOWED.", "docs/safety.md",
          ("tests/test_security.py::test_new_domains_are_asked_through_elicitation",)),
    Break("ask-user-needs-elicitation", "mcpbrowser/core/user_channel.py",
          "        if client is None or not client.can_elicit:", "        if client is None:",
          "A client without the elicitation capability gets DOMAIN_NOT_ALLOWED, with a message that says so.",
          "docs/safety.md", ("tests/test_security.py::test_without_elicitation_the_answer_says_why",)),
    # -- docs/safety.md: secrets ---------------------------------------------------------------------------------
    Break("one-time-code-is-a-secret-field", "mcpbrowser/redaction.py",
          "SECRET_AUTOCOMPLETE = (\"current-password\", \"new-password\", \"one-time-code\", ",
          "SECRET_AUTOCOMPLETE = (\"current-password\", \"new-password\", ",
          "A secret field is a password input, or one whose autocomplete names one-time-code, cc-number, ...",
          "docs/safety.md",
          ("tests/test_capture_edit.py::test_a_secret_fields_value_is_hidden_whatever_its_role",)),
    Break("only-trusted-input-marks-a-field", "mcpbrowser/redaction.py",
          "    if (!e.isTrusted) return;", "    if (false) return;",
          "Only the browser's own (trusted) input makes a field a secret one: a page's scripted typing does not.",
          "docs/safety.md", ("tests/test_secrets.py::test_a_page_cannot_choose_words_to_hide",)),
    Break("unknown-target-is-secret", "mcpbrowser/core/on_session.py",
          "(tool.may_carry_secret and response.secret is None)", "(False and response.secret is None)",
          "Unknown targets count as secret: until type has looked at its field and found a plain one, its text is "
          "stored withheld.", "docs/safety.md",
          ("tests/test_secrets.py::test_a_secret_stays_secret_in_every_later_call",)),
    Break("secret-upper-lower-cased", "mcpbrowser/session/snapshots.py",
          "for case in {v, v.upper(), v.lower()} for form in encodings(case)}",
          "for case in {v} for form in encodings(case)}",
          "A secret is scrubbed upper- and lower-cased too (a field that upper-cases a code).", "docs/safety.md",
          ("tests/test_page_attacks.py::test_a_secret_its_field_upper_cases_stays_hidden",)),
    Break("secret-cut-start", "mcpbrowser/redaction.py",
          "    if CUT in text and secrets:", "    if False:",
          "Where the server cuts a page's long text, a secret's start of 4 characters or more that the cut ends "
          "is hidden too.", "docs/safety.md",
          ("tests/test_page_attacks.py::test_the_servers_own_cuts_do_not_leave_a_secrets_start",)),
    Break("secrets-per-client", "mcpbrowser/redaction.py",
          "            known = self._owners.get(owner)", "            known = next(iter(self._owners.values()), None)",
          "Known secrets are per client: one client's secret never turns into a [REDACTED] in another's answers.",
          "docs/safety.md", ("tests/test_secret_units.py::test_each_client_knows_its_own_secrets_and_its_named_ones",)),
    Break("log-fields-scrubbed", "mcpbrowser/logs.py",
          "                    setattr(record, key, scrub_value(value, EVERY))",
          "                    setattr(record, key, value)",
          "The server's log is scrubbed of every client's secrets, in every field of a line.", "docs/safety.md",
          ("tests/test_secret_units.py::test_no_log_line_carries_a_known_secret_whatever_field_it_is_in",)),
    Break("known-before-it-is-typed", "mcpbrowser/session/snapshots.py",
          "    state.secrets.hold(held)", "    pass",
          "Known before it is typed: a client reading the live streams while a type or fill_form runs never meets "
          "its secret.", "docs/safety.md",
          ("tests/test_secret_race.py::test_a_password_filled_at_once_is_hidden_from_a_live_reader",)),
    Break("typed-key-by-key-prefixes", "mcpbrowser/session/snapshots.py",
          "    state.secrets.hold(forms)", "    pass",
          "Typed key by key, a secret's prefixes of 4 characters or more are hidden as well, for 10 s after "
          "(a title that follows the field as it fills).", "docs/safety.md",
          ("tests/test_view_attacks_more.py::test_a_title_following_the_field_late_shows_no_prefix",)),
    Break("named-secrets-per-client", "mcpbrowser/redaction.py",
          "return {**self._named.get(None, {}), **(self._named.get(owner, {}) if owner is not None else {})}",
          "return {name: value for names in self._named.values() for name, value in names.items()}",
          "A client with a token may type its own client:NAME secrets; other clients never see those names.",
          "docs/safety.md", ("tests/test_secret_units.py::test_each_client_knows_its_own_secrets_and_its_named_ones",)),
    Break("redact-headers", "mcpbrowser/redaction.py",
          "    return {name: (REDACTED if name.lower() in sensitive else value) for name, value in headers.items()}",
          "    return dict(headers)",
          "The headers in --redact-headers show as [REDACTED] in tool output.", "docs/safety.md",
          ("tests/test_security.py::test_planted_secrets_appear_nowhere",)),
    Break("pictures-mask-secret-fields", "mcpbrowser/tools/capture.py",
          "{{ -webkit-text-security: disc !important; }}", "{{ -webkit-text-security: none !important; }}",
          "Screenshots and PDFs show secret fields as dots (one-time codes and card numbers too).",
          "docs/safety.md", ("tests/test_secrets.py::test_screenshots_and_pdfs_show_secret_fields_as_dots",)),
    Break("rate-limit-boundary", "mcpbrowser/guards.py",
          "            if len(calls) >= self.per_minute:", "            if len(calls) > self.per_minute:",
          "--rate-limit N allows N calls a minute per client, session and tool; past it, RATE_LIMITED.",
          "docs/safety.md", ("tests/test_cooldown.py::test_rate_limit_window_boundary",)),
    # -- docs/safety.md: the login cooldown ----------------------------------------------------------------------
    Break("cooldown-only-timeouts", "mcpbrowser/guards.py",
          "    if error.code not in (\"WAIT_TIMEOUT\", \"NAVIGATION_FAILED\") or not error.timed_out:",
          "    if not error.timed_out:",
          "Actions never start the cooldown: only a wait or a load whose own timeout ran out, on a wall.",
          "docs/safety.md",
          ("tests/test_cooldown.py::test_property_1_every_code_on_a_login_page_is_classified_by_the_rule",)),
    Break("cooldown-reading-goes-on", "mcpbrowser/core/dispatch.py",
          "if not (tool.read_only or tool.during_cooldown) and cooldown.remaining_s(session_id, owner):",
          "if not tool.during_cooldown and cooldown.remaining_s(session_id, owner):",
          "Reading goes on: tools declared read-only run during a cooldown.", "docs/safety.md",
          ("tests/test_cooldown.py::test_property_4_every_acting_call_is_refused_without_browser_work",)),
    Break("cooldown-client-scope", "mcpbrowser/guards.py",
          "            return f\"client:{owner}\"", "            return \"server\"",
          "--cooldown-scope client (the default) pauses the calls of the client whose call ran into the wall, "
          "and nobody else's.", "docs/safety.md",
          ("tests/test_cooldown.py::test_client_scope_pauses_only_that_client_and_all_of_a_one_client_server",)),
    # -- docs/view.md --------------------------------------------------------------------------------------------
    Break("view-own-sessions-only", "mcpbrowser/view/auth.py",
          "        return self.owner is None or owner == self.owner", "        return True",
          "A token's view shows that client's sessions only; the operator mark sees every session.",
          "docs/view.md", ("tests/test_view_units.py::test_operator_sees_all_and_a_client_its_own",)),
    Break("view-one-time-key-once", "mcpbrowser/view/auth.py",
          "            self.one_time_key = None", "            pass",
          "Without tokens, the one-time sign-in URL works once.", "docs/view.md",
          ("tests/test_view_units.py::test_one_time_key_signs_in_once",)),
    Break("view-forwarded-proto-trusted-only", "mcpbrowser/view/auth.py",
          "    if trust_proxy:", "    if True:",
          "X-Forwarded-Proto counts only with --view-trusted-proxy; without it the header is ignored.",
          "docs/view.md", ("tests/test_view_units.py::test_cookie_is_secure_behind_a_trusted_tls_proxy_only",)),
    Break("view-no-framing", "mcpbrowser/view/auth.py",
          "(\"X-Frame-Options\", \"DENY\"),", "(\"X-Frame-Options\", \"SAMEORIGIN\"),",
          "Every answer says X-Frame-Options: DENY.", "docs/view.md",
          ("tests/test_view_attacks.py::test_the_views_answers_refuse_framing_and_foreign_scripts",)),
    Break("view-cookie-httponly", "mcpbrowser/view/auth.py",
          "f\"Path={path}\", \"HttpOnly\", \"SameSite=Strict\"]", "f\"Path={path}\", \"SameSite=Strict\"]",
          "Signing in sets a cookie that is HttpOnly and SameSite=Strict.", "docs/view.md",
          ("tests/test_view_attacks.py::test_the_sign_in_cookie_and_the_token_stay_out_of_urls_and_referers",)),
    Break("view-sign-out-ends-the-sign-in", "mcpbrowser/view/app.py",
          "self.sign_ins.end(auth.cookie_of(environ) or \"\")", "auth.cookie_of(environ)",
          "Sign out ends the sign-in on the server, so a copied cookie stops working too.", "docs/view.md",
          ("tests/test_view.py::test_a_cookie_from_before_sign_out_is_refused",)),
    Break("view-sign-ins-kept", "mcpbrowser/view/auth.py",
          "SIGN_INS_KEPT = 32", "SIGN_INS_KEPT = 1_000_000",
          "A token keeps its 32 newest sign-ins; signing in a 33rd time ends the oldest.", "docs/view.md",
          ("tests/test_view_attacks.py::test_signing_in_again_and_again_keeps_a_bounded_number_of_sign_ins",)),
    Break("view-sign-in-lockout", "mcpbrowser/view/app.py",
          "        if wait > 0:", "        if False:",
          "Guessing tokens: after 10 refused sign-ins from one address within a minute, every sign-in from that "
          "address answers 429 until the minute is over.", "docs/view.md",
          ("tests/test_view_attacks.py::test_guessing_tokens_at_the_sign_in_is_slowed_down",)),
    Break("view-one-person-holds", "mcpbrowser/tools/person.py",
          "    if holder not in (None, person):", "    if False:",
          "People who press Take over at the same moment: one holds the session, the others are told who does "
          "(409).", "docs/view.md",
          ("tests/test_view.py::test_people_pressing_take_over_at_once_only_one_holds_the_session",)),
    Break("view-hand-back-ends-cooldown", "mcpbrowser/core/browser.py",
          "        self.user.cooldown.finish(session_id, self.registry.owner_of(session_id))",
          "        self.registry.owner_of(session_id)",
          "Hand back: a login cooldown on the session ends.", "docs/view.md",
          ("tests/test_view.py::test_handing_back_ends_the_cooldown_the_wall_started",)),
    Break("view-queued-call-held", "mcpbrowser/core/on_session.py",
          "        if held is not None and not (tool.read_only or tool.during_cooldown):", "        if False:",
          "An agent's call accepted before the take-over and still queued answers SESSION_HELD_BY_PERSON when "
          "its turn comes.", "docs/view.md",
          ("tests/test_view_attacks.py::test_an_agent_call_queued_before_the_take_over_does_not_act_after_it",)),
    Break("view-person-field-learned", "mcpbrowser/tools/person.py",
          "        snapshots.learn_secrets(state, (value,))", "        pass",
          "What a person types is a secret: what the field holds after their keys too (a typo fixed in the "
          "middle).", "docs/view.md",
          ("tests/test_view_attacks_more.py::test_a_password_fixed_in_the_middle_is_nowhere",)),
    Break("view-person-field-could-hold", "mcpbrowser/tools/person.py",
          "if isinstance(value, str) and value and field.could_hold(value):", "if isinstance(value, str) and value:",
          "Only a text the person's keys could have left in the field is learned: a page cannot have words of its "
          "choosing scrubbed from the agent's answers.", "docs/view.md",
          ("tests/test_view_attacks_more.py::test_a_page_cannot_have_words_of_its_choosing_learned_as_the_persons_secret",)),
    Break("view-person-prefixes", "mcpbrowser/tools/person.py",
          "        snapshots.typing_key_by_key(state, typed)", "        pass",
          "A person's typing: its prefixes of 4 characters or more are hidden until 10 s after (a page that "
          "echoes each key).", "docs/view.md",
          ("tests/test_view_attacks.py::test_a_page_that_echoes_each_key_late_shows_no_prefix_after_the_typing",)),
    # -- docs/history.md -----------------------------------------------------------------------------------------
    Break("history-file-private", "mcpbrowser/core/store_sqlite.py",
          "os.O_WRONLY | os.O_CREAT, 0o600))  # history is private", "os.O_WRONLY | os.O_CREAT, 0o644))",
          "The key file is readable only by you, and the database file is 0600 too.", "docs/history.md",
          ("tests/test_store.py::test_database_and_key_file_are_private",)),
    Break("saved-files-private", "mcpbrowser/tools/capture.py",
          "        os.chmod(part, 0o600)  # as the history database", "        os.chmod(part, 0o644)  # as the history",
          "Files the server writes (traces, screenshots, PDFs, ...) are 0600.", "docs/history.md",
          ("tests/test_secrets.py::test_a_trace_keeps_no_secret_and_still_opens",)),
    Break("fill-form-stores-no-value", "mcpbrowser/core/answer.py",
          "params[\"fields\"] = [{**f, \"value\": REDACTED} if isinstance(f, dict) and \"value\" in f else f",
          "params[\"fields\"] = [f if isinstance(f, dict) and \"value\" in f else f",
          "fill_form never stores a value.", "docs/safety.md",
          ("tests/test_history.py::test_fill_form_stores_no_value_not_even_a_plain_fields",)),
    Break("session-in-use-elsewhere", "mcpbrowser/core/lifecycle_tools.py",
          "    if holder is not None and holder[\"state\"] == \"active\" and holder[\"alive\"]:",
          "    if False:",
          "resume_session on a session another live server has open answers SESSION_IN_USE, naming that server.",
          "docs/history.md", ("tests/test_shared_history.py::test_two_servers_share_one_history",)),
    Break("start-closes-only-gone-servers", "mcpbrowser/core/store.py",
          "gone = [sid for sid, instance in rows if not (instance and self.alive(instance))]",
          "gone = [sid for sid, instance in rows]",
          "At start, a server closes only the sessions whose server is gone; another live server's stay active.",
          "docs/history.md",
          ("tests/test_store_faults.py::test_pruning_and_start_up_leave_a_live_servers_sessions_alone",)),
    Break("pruning-skips-live-servers", "mcpbrowser/core/store.py",
          "        kept = [sid for sid, instance in rows if self.alive(instance)]", "        kept = []",
          "Pruning never drops the calls of a session that another live server has open.", "docs/history.md",
          ("tests/test_store_faults.py::test_pruning_and_start_up_leave_a_live_servers_sessions_alone",)),
    Break("only-own-files-counted", "mcpbrowser/core/file_keeper.py",
          "for f in self._files() if f[0] in own)", "for f in self._files())",
          "The limits count and remove only the files the server saved; a file it did not write is never "
          "counted, aged or removed.", "docs/history.md",
          ("tests/test_resource_units.py::test_files_the_server_did_not_save_are_neither_counted_nor_removed",)),
    Break("only-gone-writers-part-files", "mcpbrowser/core/file_keeper.py",
          "    return match is not None and not alive(int(match.group(1)))", "    return match is not None",
          "At start the server removes the .part files a killed server left, and only those.", "docs/history.md",
          ("tests/test_resource_units.py::test_at_start_the_partial_files_of_gone_writers_go_and_a_live_ones_stay",)),
    # -- docs/reliability.md -------------------------------------------------------------------------------------
    Break("restart-budget", "mcpbrowser/core/browser_supervisor.py",
          "        if len(self._restarts) < self.max_restarts:", "        if True:",
          "At most --max-restarts restarts within --restart-window: past that the server is degraded.",
          "docs/reliability.md",
          ("tests/test_restart_backoff.py::test_a_crash_loop_stops_at_the_restart_limit_until_the_window_allows_one",)),
    Break("restart-wait-at-most-4-s", "mcpbrowser/core/browser_supervisor.py",
          "delay = min(BACKOFF_MAX_S, BACKOFF_BASE_S * (2 ** min(self._count - 1, 16) - 1))",
          "delay = BACKOFF_BASE_S * (2 ** min(self._count - 1, 16) - 1)",
          "A browser that keeps dying as it starts waits 0, 0.25, 0.75, 1.75, then 4 s at most.",
          "docs/reliability.md",
          ("tests/test_restart_backoff.py::test_a_browser_that_keeps_dying_as_it_starts_waits_longer_each_time_up_to_4_s",)),
    Break("restart-crashes-decay", "mcpbrowser/core/browser_supervisor.py",
          "self._count = self._count * 0.5 ** (max(0.0, ran_s) / BACKOFF_HALF_LIFE_S) + 1",
          "self._count = self._count + 1",
          "A browser that crashed once, or once a minute, restarts at once: earlier crashes count half as much "
          "for every second the browser ran since.", "docs/reliability.md",
          ("tests/test_restart_backoff.py::test_a_browser_that_ran_a_while_restarts_at_once_however_often_it_crashed_before",)),
    Break("breaker-counts-browser-errors-only", "mcpbrowser/core/dispatch.py",
          "elif error.code == \"BROWSER_ERROR\" and self.breaker.failed(call.tool):",
          "elif self.breaker.failed(call.tool):",
          "The circuit breaker counts BROWSER_ERROR failures; the agent's own mistakes do not count.",
          "docs/reliability.md",
          ("tests/test_threads.py::test_core_refuses_a_tool_with_circuit_open_and_other_failures_do_not_count",)),
    Break("memory-guard", "mcpbrowser/guards.py",
          "        return used if used > self.limit_mb else None", "        return None",
          "The memory guard refuses new sessions while the browser's processes use more than --max-memory-mb.",
          "docs/reliability.md",
          ("tests/test_reliability.py::test_memory_guard_refuses_new_sessions_over_the_limit",)),
    Break("alert-loop-dismissed", "mcpbrowser/session/state.py",
          "            tab.looping = tab.looping or tab.dialog_run > LOOP_DIALOGS",
          "            tab.looping = False",
          "An alert loop: past 3 dialogs in a row, the server dismisses that page's further dialogs itself.",
          "docs/reliability.md",
          ("tests/test_misbehaving_pages.py::test_an_alert_loop_is_answered_by_the_server_and_handle_dialog_never_fails",)),
    Break("page-strings-shortened", "mcpbrowser/page_strings.py",
          "    if len(text) <= limit:", "    if True:",
          "A page's own strings are shortened in what the agent reads (a title to 500 characters, a URL to 200), "
          "and kept whole in the history.", "docs/reliability.md",
          ("tests/test_misbehaving_pages.py::test_page_controlled_strings_are_shortened_in_answers_and_whole_in_the_history",)),
    Break("lone-surrogates-replaced", "mcpbrowser/page_strings.py",
          "        return _LONE_SURROGATE.sub(REPLACEMENT, value) if _LONE_SURROGATE.search(value) else value",
          "        return value",
          "Text JSON cannot carry (a lone surrogate) reaches you as U+FFFD in every answer, log line and row.",
          "docs/safety.md",
          ("tests/test_page_text_units.py::test_valid_text_replaces_only_lone_surrogates_and_keeps_what_is_clean",)),
    # -- the six the outside audit found no test for, and the two untruths (issue 70) -----------------------
    Break("view-signin-get-counted", "mcpbrowser/view/app.py",
          'if method == "POST" or key:', 'if method == "POST":',
          "Wrong sign-ins are slowed down, whichever way the one-time key comes (a GET's ?key= too).",
          "docs/view.md",
          ("tests/test_view_units.py::test_wrong_one_time_keys_by_get_are_counted_as_refused_sign_ins",)),
    Break("log-traceback-formatted-again", "mcpbrowser/logs.py",
          "record.exc_text, record.exc_info = scrubbed, None", "record.exc_text = scrubbed",
          "A logged traceback is scrubbed of known secrets, through the server's own JSON formatter too.",
          "docs/safety.md",
          ("tests/test_secret_units.py::test_a_logged_traceback_never_shows_a_known_secret",)),
    Break("person-contenteditable-run-by-run", "mcpbrowser/tools/person.py",
          "snapshots.learn_secrets(state, (typed,))", "snapshots.learn_secrets(state, (text,))",
          "What a person types into a password-like contenteditable is learned whole, however slowly typed.",
          "docs/view.md",
          ("tests/test_view_attacks_more.py::test_a_password_typed_slowly_into_a_contenteditable_is_nowhere",)),
    Break("files-quota-keeps-the-named-file", "mcpbrowser/core/file_keeper.py",
          "if path in old or path in kept:", "if path in old:",
          "The files quota never removes the file an open session's latest answer named.", "docs/history.md",
          ("tests/test_resource_units.py::test_the_files_quota_keeps_the_file_an_open_sessions_latest_answer_named",)),
    Break("inp-is-the-worst", "mcpbrowser/perf_report.py",
          "worst = max(groups.values()", "worst = min(groups.values()",
          "INP is the page's worst interaction, with that interaction's phases and scripts.",
          "docs/performance-insights.md",
          ("tests/test_performance_insights.py::test_inp_is_the_worst_interaction_with_its_own_phases_and_scripts",)),
    Break("measured-load-without-wrappers", "mcpbrowser/tools/performance.py",
          'plain.send("Page.addScriptToEvaluateOnNewDocument", {"source": PLAIN})', "pass",
          "A long task in a promise's reaction is named with the page's script, not the settle's wrapper.",
          "docs/performance-insights.md",
          ("tests/test_performance_insights.py::test_a_long_task_in_a_promises_reaction_is_named_with_the_pages_"
           "script_and_the_code_that_made_the_promise[/fetched-fetched.js-fetch('/data.json').then(render)-1]",)),
    Break("wrappers-back-after-a-measured-load", "mcpbrowser/tools/performance.py",
          "window.__mcpbPlain ? window.__mcpbPlain(false) : false;  // the settle's wrappers back", "false;",
          "After the measurement the settle waits for the page's requests again.", "docs/performance-insights.md",
          ("tests/test_performance_insights.py::test_a_long_task_in_a_promises_reaction_is_named_with_the_pages_"
           "script_and_the_code_that_made_the_promise[/fetched-fetched.js-fetch('/data.json').then(render)-1]",)),
    Break("loaded-again-when-fetch-was-kept", "mcpbrowser/tools/performance.py",
          "    if loads and again:", "    if False:",
          "A page that kept the browser's own fetch while measured is loaded again, the settle's wrappers in.",
          "docs/performance-insights.md",
          ("tests/test_performance_insights.py::test_a_long_task_in_a_promises_reaction_is_named_with_the_pages_"
           "script_and_the_code_that_made_the_promise[/fetched-fetched.js-fetch('/data.json').then(render)-1]",)),
    Break("wrappers-back-after-a-failed-load", "mcpbrowser/tools/performance.py",
          'state.act(state.tab.page, "evaluate", expression=UNPLAIN, deadline_s=1)', "pass",
          "A measured load that fails leaves the page the settle's wrappers.", "docs/performance-insights.md",
          ("tests/test_performance_insights.py::test_a_measurement_whose_load_fails_leaves_the_settle_its_wrappers",)),
    Break("live-picture-per-person", "mcpbrowser/view/app.py",
          "if mine >= max(1, self.max_live // 2) or sum(self._watching.values()) >= self.max_live:",
          "if sum(self._watching.values()) >= self.max_live:",
          "One person cannot open every live picture the server allows: each has a share.", "docs/view.md",
          ("tests/test_view_attacks.py::test_one_tenant_watching_many_times_cannot_starve_the_server",)),
    Break("navigated-any-new-document", "mcpbrowser/session/playwright_internals.py",
          'handler(event.get("newDocument") is not None)', 'handler(bool(event.get("newDocument")))',
          "A new document (about:blank, a data: URL too) is a navigation, and the old page's refs are gone.",
          "docs/tools.md",
          ("tests/test_single_page_apps.py::test_every_new_document_is_navigated_and_the_old_refs_are_gone",)),
    Break("fill-form-empty-field-named", "mcpbrowser/tools/interaction.py",
          '        if "secretName" not in field and "value" not in field:', "        if False:",
          "A fill_form field with neither a value nor a secretName is refused, naming the field.", "docs/tools.md",
          ("tests/test_secrets.py::test_a_named_secret_is_typed_by_name_and_never_seen",)),
    Break("smooth-scrolls-at-once", "mcpbrowser/core/browser_process.py",
          'NO_SMOOTH_SCROLL_FLAG = "--disable-smooth-scrolling"', 'NO_SMOOTH_SCROLL_FLAG = "--disable-nothing"',
          "The browser the server launches scrolls at once where a page asks for a smooth scroll.", "docs/tools.md",
          ("tests/test_single_page_apps.py::test_the_browser_we_launch_scrolls_at_once_where_a_page_asks_for_a_smooth_"
           "scroll",
           "tests/test_single_page_apps.py::test_a_smooth_scroll_the_click_asked_for_has_arrived_when_it_answers"
           "[#link-Arrived at far]")),
    Break("a-scripts-box-scroll-is-a-scroll", "mcpbrowser/session/settle.py",
          "          if (spot(boxes[i]) === before[i]) continue;", "          continue;",
          "A script's scroll of a box is waited for as a scroll.", "docs/tools.md",
          ("tests/test_single_page_apps.py::test_a_scripts_scroll_of_a_box_is_a_scroll_before_its_event",
           "tests/test_single_page_apps.py::test_a_smooth_scroll_the_click_asked_for_has_arrived_when_it_answers"
           "[#box-down-Arrived at box-end]")),
    Break("a-tickers-scroll-is-its-own", "mcpbrowser/session/settle.py",
          "const origin = movedBy.get(e.target);", "const origin = undefined;",
          "A page's own scrolling, begun before the action, is not the action's.", "docs/tools.md",
          ("tests/test_single_page_apps.py::test_a_page_that_scrolls_itself_for_ever_does_not_make_every_action_wait_the_"
           "cap",)),
    Break("scroll-bookkeeping-reads-the-browsers-own", "mcpbrowser/session/settle.py",
          "node = kind === 11 ? read(hostOf, node) : (kind === 1 && read(slotOf, node)) || read(parentOf, node);",
          "node = kind === 11 ? read(hostOf, node) : (kind === 1 && read(slotOf, node)) || node.parentElement;",
          "A page's odd scrolling code runs as it did: the settle's bookkeeping reads the browser's own getters.",
          "docs/tools.md",
          ("tests/test_single_page_apps.py::test_a_pages_odd_scrolling_code_runs_as_it_did_and_a_slotted_box_is_waited_"
           "for",)),
]


class CatalogError(Exception):
    pass


def problems(brk: Break, root: pathlib.Path = ROOT) -> list[str]:
    """What is wrong with one entry against the code under `root` (empty when it can be applied)."""
    found = []
    path = root / brk.file
    if not path.is_file():
        return [f"{brk.id}: {brk.file} does not exist"]
    text = path.read_text(encoding="utf-8")
    count = text.count(brk.find)
    if count != 1:
        found.append(f"{brk.id}: the find-text occurs {count} times in {brk.file}, not once: {brk.find!r}")
    elif path.suffix == ".py":
        # A break that does not compile would fail its tests for that alone (a server that cannot start).
        try:
            compile(text.replace(brk.find, brk.replace), str(path), "exec")
        except SyntaxError as exc:
            found.append(f"{brk.id}: {brk.file} does not compile with the break: {exc.msg} (line {exc.lineno})")
    if "\n" in brk.find or "\n" in brk.replace:
        found.append(f"{brk.id}: a break is a change within one line (no newline in find or replace)")
    if brk.find == brk.replace:
        found.append(f"{brk.id}: find and replace are the same")
    if not brk.tests:
        found.append(f"{brk.id}: names no test")
    return found


def apply(brk: Break, root: pathlib.Path) -> str:
    """Write the break into the copy under `root`; the file's text before it, to restore."""
    errors = problems(brk, root)
    if errors:
        raise CatalogError("; ".join(errors))
    path = root / brk.file
    before = path.read_text(encoding="utf-8")
    write_source(path, before.replace(brk.find, brk.replace))
    return before


def restore(brk: Break, root: pathlib.Path, before: str) -> None:
    write_source(root / brk.file, before)


def write_source(path: pathlib.Path, text: str) -> None:
    # A broken and a restored file can have the same size and second: drop the bytecode either left.
    path.write_text(text, encoding="utf-8")
    for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        cached.unlink()


PROBE = '''"""guard_breaks' probe: the run must test the scratch copy's mcpbrowser, not an installed one."""
import os

import mcpbrowser
import pytest


def pytest_configure(config):
    here = os.path.realpath(os.path.dirname(__file__))
    if not os.path.realpath(mcpbrowser.__file__).startswith(here + os.sep):
        raise pytest.UsageError(f"mcpbrowser imported from {mcpbrowser.__file__}, not from {here}")
'''


def make_copy(parent: pathlib.Path, n: int) -> pathlib.Path:
    """A copy of the repository's files under `parent`, the .venv linked in."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, check=True, capture_output=True).stdout.decode().split("\0")
    copy = parent / f"copy{n}"
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the work tree is left out
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    (copy / ".venv").symlink_to(ROOT / ".venv")
    (copy / "_guard_breaks_probe.py").write_text(PROBE, encoding="utf-8")
    return copy


@dataclasses.dataclass
class Outcome:
    verdict: str  # caught, NOT CAUGHT, TIMEOUT, ERROR (and passed / FAILED for a baseline)
    seconds: float
    detail: str = ""


def run_tests(copy: pathlib.Path, tests: tuple[str, ...], timeout: float) -> tuple[int | None, str, float]:
    """pytest on `tests` in the copy: (exit code or None on timeout, its output's tail, seconds)."""
    env = dict(os.environ, PYTHONPATH=str(copy), COLUMNS="400")  # wide enough for the summary to say why
    env.pop("PYTEST_ADDOPTS", None)
    command = [str(copy / ".venv" / "bin" / "python"), "-m", "pytest", "-p", "_guard_breaks_probe",
               "-p", "no:cacheprovider", "-x", "-q", "-rf", "--no-header", *tests]
    started = time.monotonic()
    # A session of its own, so that a timeout ends the servers and browsers the tests started too.
    proc = subprocess.Popen(command, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        code = None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the tests left behind
        except ProcessLookupError:
            pass
    return code, out.decode(errors="replace"), time.monotonic() - started


def failed_tests(output: str) -> list[str]:
    """The summary's failed tests (-rf: `FAILED tests/x.py::test_y[param] - why`), each with the start of its why."""
    found = []
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            node, _, why = line.split(" ", 1)[1].partition(" - ")
            if ".py" in node.split("::")[0]:
                found.append(f"{node} ({why[:100]})" if why else node)
    return found


def baseline(copy: pathlib.Path, tests: tuple[str, ...], timeout: float) -> Outcome:
    code, out, seconds = run_tests(copy, tests, timeout)
    if code == 0:
        return Outcome("passed", seconds)
    if code is None:
        return Outcome("TIMEOUT", seconds, f"the tests took over {timeout:.0f} s unbroken")
    return Outcome("FAILED", seconds, f"pytest exit {code} unbroken:\n{tail(out)}")


def try_break(copy: pathlib.Path, brk: Break, timeout: float) -> Outcome:
    try:
        before = apply(brk, copy)
    except CatalogError as exc:
        return Outcome("ERROR", 0.0, str(exc))
    try:
        code, out, seconds = run_tests(copy, brk.tests, timeout)
    finally:
        restore(brk, copy, before)
    if code == 1:
        return Outcome("caught", seconds, "failed: " + " ".join(failed_tests(out)))
    if code == 0:
        return Outcome("NOT CAUGHT", seconds, "every named test passed with the break")
    if code is None:
        return Outcome("TIMEOUT", seconds, f"over {timeout:.0f} s with the break")
    return Outcome("ERROR", seconds, f"pytest exit {code} (not a test failure):\n{tail(out)}")


def tail(output: str, lines: int = 15) -> str:
    return "\n".join("    " + line for line in output.rstrip().splitlines()[-lines:])


def run(breaks: list[Break], jobs: int, timeout: float) -> int:
    started = time.monotonic()
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="guard-breaks-"))
    copies = [make_copy(scratch, n) for n in range(jobs)]
    free = list(copies)
    lock = threading.Lock()
    say_lock = threading.Lock()
    outcomes: dict[str, Outcome] = {}

    def with_copy(work):
        def job(*args):
            with lock:
                copy = free.pop()
            try:
                return work(copy, *args)
            finally:
                with lock:
                    free.append(copy)
        return job

    def say(text: str) -> None:
        with say_lock:
            print(text, flush=True)

    try:
        sets = sorted({brk.tests for brk in breaks})
        say(f"{len(breaks)} breaks, {len(sets)} sets of tests, {jobs} job(s), scratch {scratch}")
        bases: dict[tuple[str, ...], Outcome] = {}
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            unbroken = pool.map(with_copy(lambda copy, tests: baseline(copy, tests, timeout)), sets)
            for tests, outcome in zip(sets, unbroken, strict=True):
                bases[tests] = outcome
                say(f"  baseline {outcome.verdict:<7} {outcome.seconds:6.1f} s  {' '.join(tests)}"
                    + (f"\n{outcome.detail}" if outcome.detail else ""))

        def one(copy: pathlib.Path, brk: Break) -> Outcome:
            if bases[brk.tests].verdict != "passed":
                return Outcome("ERROR", 0.0, "its tests do not pass unbroken (baseline above)")
            return try_break(copy, brk, timeout)

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            for brk, outcome in zip(breaks, pool.map(with_copy(one), breaks), strict=True):
                outcomes[brk.id] = outcome
                say(f"{outcome.verdict:<10} {outcome.seconds:6.1f} s  {brk.id}: {outcome.detail}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    counts: dict[str, int] = {}
    for outcome in outcomes.values():
        counts[outcome.verdict] = counts.get(outcome.verdict, 0) + 1
    minutes, seconds = divmod(round(time.monotonic() - started), 60)
    say(f"{len(breaks)} breaks: " + ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))
        + f"; {minutes} min {seconds:02d} s with {jobs} job(s)")
    missed = [brk_id for brk_id, outcome in outcomes.items() if outcome.verdict != "caught"]
    if missed:
        say("Not caught: " + " ".join(missed))
    return 0 if counts.get("caught", 0) == len(breaks) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="The unbroken baseline runs once per distinct set of tests (breaks naming the same tests share "
               "it), before any break; a break whose baseline did not pass is an ERROR.")
    parser.add_argument("--list", action="store_true", help="print the catalog (id, file, promise, tests) and exit")
    parser.add_argument("--only", action="append", metavar="ID",
                        help="run only this break (repeat for several, or give ids separated by commas)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="breaks run at once, each in its own copy (default 1: the tests start browsers)")
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds one run of a break's tests may take before it counts as TIMEOUT (default 300)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    breaks = BREAKS
    if args.only:
        wanted = {one.strip() for given in args.only for one in given.split(",") if one.strip()}
        unknown = wanted - {brk.id for brk in BREAKS}
        if unknown:
            parser.error(f"no break with the id {', '.join(sorted(unknown))} (--list shows them)")
        breaks = [brk for brk in BREAKS if brk.id in wanted]
    if args.list:
        for brk in breaks:
            print(f"{brk.id}  ({brk.file}; {brk.doc})\n    {brk.promise}\n    tests: {' '.join(brk.tests)}")
        print(f"{len(breaks)} breaks")
        return 0
    bad = [problem for brk in breaks for problem in problems(brk)]
    if bad:
        print("The catalog no longer fits the code:\n" + "\n".join("  " + p for p in bad), file=sys.stderr)
        return 2
    return run(breaks, args.jobs, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
