"""Whether Chromium's CPU throttling frees CPU: the case for (or against) a server-wide CPU limit.

Runs a page that keeps its thread busy (a loop in a timer) in one session of the library API,
sets the session's CPU rate to each value given, and prints how much of a core the browser's
renderer processes used meanwhile (their user and system time in /proc, Linux only). If the
share fell as the rate rose, a server-wide rate would protect the machine from busy pages; it
does not fall (docs/tools.md, Throttling), so mcpbrowser has no such setting.

    .venv/bin/python scripts/cpu_throttle_cost.py [--rates 1,4,10] [--seconds 4]
"""

import argparse
import os
import time

from mcpbrowser import Browser, Config
from mcpbrowser.process_tree import cmdline, descendants

BUSY = ("data:text/html,<title>busy</title><script>"
        "setInterval(() => { const end = performance.now() + 50; while (performance.now() < end); }, 0)</script>")


def renderer_cpu_s():
    """CPU seconds used so far by this process's renderer processes."""
    total = 0
    for pid in descendants(os.getpid()):
        if "--type=renderer" not in cmdline(pid):
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="1,4,10")
    parser.add_argument("--seconds", type=float, default=4.0)
    options = parser.parse_args()
    with Browser(Config(headless=True, db=":memory:")) as browser:
        browser.start()
        with browser.create_session(url=BUSY) as session:
            for rate in [float(r) for r in options.rates.split(",")]:
                session.throttle(cpu_rate=rate)
                time.sleep(0.5)
                used, started = renderer_cpu_s(), time.monotonic()
                time.sleep(options.seconds)
                share = (renderer_cpu_s() - used) / (time.monotonic() - started)
                print(f"rate {rate:g}: the renderers used {share:.0%} of a core")


if __name__ == "__main__":
    main()
