"""A session's CPU and network throttling, as Chrome DevTools offers it, applied to each of its tabs.

`settings` and `conditions` are pure (any thread); `apply` and `change` run on the SESSION THREAD ONLY: they talk CDP to
the session's pages (Emulation.setCPUThrottlingRate, Network.emulateNetworkConditions) through each page's CDP session.
Both are per page in Chromium, so every tab the session opens (popups included) gets them as it opens
(SessionState._on_page). Other engines have no such protocol: UNSUPPORTED_BROWSER.
"""

from mcpbrowser import schema
from mcpbrowser.errors import UnsupportedBrowser

# Chrome DevTools' presets (front_end/core/sdk/NetworkManager.ts): throughput in bytes/s,
# latency in ms, each with DevTools' own factors (0.8 or 0.9 of the nominal rate, the RTT
# times 5, 3.75 or 2.75). "Fast 3G" is the name DevTools gave "Slow 4G" until 2024.
PRESETS: dict[str, dict[str, float]] = {
    "Slow 3G": {"latency": 2000, "downloadThroughput": 50_000, "uploadThroughput": 50_000},
    "Fast 3G": {"latency": 562.5, "downloadThroughput": 180_000, "uploadThroughput": 84_375},
    "Slow 4G": {"latency": 562.5, "downloadThroughput": 180_000, "uploadThroughput": 84_375},
    "Fast 4G": {"latency": 165, "downloadThroughput": 1_012_500, "uploadThroughput": 168_750},
}
NETWORK = ["none", "offline", *PRESETS]
MAX_CPU_RATE = 100

SCHEMA = {
    "cpuRate": {**schema.number("CPU slow-down: 4 runs scripts 4x slower; 1 is none.", 1, MAX_CPU_RATE)},
    "network": schema.string("Network preset (Chrome DevTools'); none ends throttling.", enum=NETWORK),
    "latencyMs": schema.number("Added round-trip ms (over the preset's).", 0, 60_000),
    "downloadKbps": schema.number("Download limit, kbit/s (over the preset's).", 1, 10_000_000),
    "uploadKbps": schema.number("Upload limit, kbit/s (over the preset's).", 1, 10_000_000),
}


def settings(args, current=None):
    """The session's throttling after `args` (SCHEMA's fields) change `current`: plain data.

    {"cpuRate": n} and/or {"network": name, "latencyMs", "downloadKbps", "uploadKbps"}; {} is none. A preset fills the
    three figures, which the args may override; figures without a preset keep the current ones.
    """
    out = dict(current or {})
    if "cpuRate" in args:
        out.pop("cpuRate", None)
        if args["cpuRate"] != 1:
            out["cpuRate"] = args["cpuRate"]
    custom = [key for key in ("latencyMs", "downloadKbps", "uploadKbps") if key in args]
    name = args.get("network")
    if name in ("none", "offline"):
        for key in ("network", "latencyMs", "downloadKbps", "uploadKbps"):
            out.pop(key, None)
        if name == "offline":
            out["network"] = "offline"
    elif name is not None:
        preset = PRESETS[name]
        out.update(network=name, latencyMs=preset["latency"], downloadKbps=preset["downloadThroughput"] * 8 / 1000,
                   uploadKbps=preset["uploadThroughput"] * 8 / 1000)
    if custom:  # figures of its own: no longer a preset (nor offline)
        out.update(network="custom", **{key: args[key] for key in custom})
    return out


def conditions(throttle):
    """Network.emulateNetworkConditions' parameters for a session's throttling."""
    network = throttle.get("network")
    if network == "offline":
        return {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
    return {"offline": False, "latency": throttle.get("latencyMs", 0),
            "downloadThroughput": throttle["downloadKbps"] * 125 if "downloadKbps" in throttle else -1,
            "uploadThroughput": throttle["uploadKbps"] * 125 if "uploadKbps" in throttle else -1}


# -- SESSION THREAD -----------------------------------------------------------------

def change(state, throttle):
    """Make `throttle` the session's and apply it to every open tab; raises UNSUPPORTED_BROWSER off Chromium."""
    if not state.chromium:
        raise UnsupportedBrowser(f"Throttling needs Chromium (CDP); this server runs {state.browser.browser_type.name} "
                                 "(--browser).", session_id=state.session_id)
    state.throttle = throttle
    state.worker.options["throttle"] = throttle  # a watchdog restart and list_sessions see it
    for tab in list(state.tabs):
        apply(state, tab)


def apply(state, tab):
    """Send the session's throttling to one tab (a new one, or all of them after a change)."""
    throttle = state.throttle
    if not state.chromium or tab.page.is_closed() or (not throttle and not tab.throttled):
        return
    cdp = tab.cdp()
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle.get("cpuRate", 1)})
    cdp.send("Network.emulateNetworkConditions", conditions(throttle))
    tab.throttled = True  # a later "none" must reach it


def offline(state):
    return state.throttle.get("network") == "offline"
