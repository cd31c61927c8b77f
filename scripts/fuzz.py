"""Protocol fuzzing at scale: 10,000 hostile lines against one server, checked by the test suite's oracle.

    .venv/bin/python scripts/fuzz.py [--examples 10000] [--seed N]

The oracle and the strategies are the ones tests/test_fuzz.py runs a few hundred
cases of: every request gets exactly one well-formed answer, notifications and
stray responses get none, garbage gets one error, nothing else reaches stdout,
and the server stays up. Prints a summary; exits non-zero on the first failure.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import test_fuzz  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from strategies import raw_lines  # noqa: E402
from support import RawServer  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="lines to send (default 10000)")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed, to replay a run")
    args = parser.parse_args()
    server = RawServer("--max-message-bytes", str(test_fuzz.LIMIT))
    server.initialize()
    kinds = {"request": 0, "silent": 0, "error": 0}
    started = time.monotonic()

    @settings(max_examples=args.examples, deadline=None, database=None, derandomize=args.seed is None,
              suppress_health_check=list(HealthCheck))
    @given(line=raw_lines)
    def run(line):
        kinds[test_fuzz.check_line(server, line)] += 1

    if args.seed is not None:
        run = seed(args.seed)(run)
    try:
        run()
        alive = server.proc.poll() is None
    finally:
        server.close()
    total = sum(kinds.values())
    print(f"fuzz: {total} lines in {time.monotonic() - started:.1f} s: {kinds['request']} requests, "
          f"{kinds['silent']} notifications or stray responses, {kinds['error']} malformed; "
          f"every answer matched, server {'up' if alive else 'DOWN'} afterwards")
    return 0 if alive else 1


if __name__ == "__main__":
    sys.exit(main())
