#!/usr/bin/env bash
# Set up with the test tools (idempotent: `scripts/setup.sh test`), then run the whole test suite:
#   1. the full suite on the project's .venv (extra arguments go to pytest, and
#      then only this step runs, one test at a time): the modules in parallel worker
#      processes, then the tests marked `alone` (they bound a time or a CPU share) two at a time;
#   2. tox: the unit and smoke tests on the other Python versions (3.10, 3.12, 3.13), ruff, mypy,
#      the packaging check (wheel contents, `pipx run --spec . mcpbrowser --help`) and the docs
#      site (`mkdocs build --strict`).
set -euo pipefail
cd "$(dirname "$0")/.."
# Bytecode is written even where the environment says not to: pytest keeps its assertion-rewritten test
# modules there, and a process that finds them collects in half the CPU (the alone run's two
# workers: 7 s of CPU instead of 14).
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh test

if [ "$#" -gt 0 ]; then
  exec .venv/bin/python -m pytest "$@"
fi
# Most tests wait on a browser, a timer or a pipe rather than on a core: TEST_WORKERS (default 4: on 2 cores the run with 3 kept them 59% busy)
# processes, each with its own browsers and page server, take whole modules (a module's
# server is shared by its tests), the longest first (tests/conftest.py). Both runs always run,
# so one failure does not hide another.
# Each run has 25 minutes (it takes 7-10): when a worker process dies, pytest-xdist's loadfile
# scheduler can wait for it forever, and CI would only stop at its own limit, saying nothing.
status=0
timeout -k 30 1500 .venv/bin/python -m pytest -n "${TEST_WORKERS:-4}" --dist loadfile --no-loadscope-reorder \
  -m "not alone" --durations=25 || status=$?
# Two at a time, a test a worker (each worker opens its own module server): a core each, as one alone
# had with the rest of the machine idle but half waiting. 5 runs of 5 passed, 76-83 s against
# 117-128 s one by one (2026-11-27); the 4-worker run above is what made them flaky.
timeout -k 30 1500 .venv/bin/python -m pytest -m alone -n 2 --dist load --durations=10 || status=$?
[ "$status" != 124 ] || echo "scripts/test.sh: a pytest run passed its 25 minutes and was stopped" >&2
[ "$status" = 0 ] || exit "$status"

# tox finds interpreters as python3.X on PATH. pyenv keeps them in per-version
# folders: append those (after everything else, so `python3` itself is unchanged).
if command -v pyenv >/dev/null 2>&1; then
  for version in $(pyenv versions --bare | grep -E '^3\.1[0-3]\.[0-9]+$'); do
    PATH="$PATH:$(pyenv root)/versions/$version/bin"
  done
  export PATH
fi
# The other Pythons run the unit tests and the end-to-end smoke tour (markers in setup.cfg);
# lint, type, package and docs (the manual built with mkdocs --strict) ignore the pytest
# arguments. Three at a time: about 90 s instead of about 150 s one after another, which keeps
# the whole suite inside its 15 minutes.
.venv/bin/tox -p 3 --parallel-no-spinner -e py310,py312,py313,lint,type,package,docs -- -m "unit or smoke"
