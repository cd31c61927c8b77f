#!/usr/bin/env bash
# Set up (idempotent), then run the whole test suite:
#   1. the full suite on the project's .venv (extra arguments go to pytest, and
#      then only this step runs);
#   2. tox: the unit and smoke tests on the other Python versions (3.10, 3.12, 3.13), ruff, mypy,
#      the packaging check (wheel contents, `pipx run --spec . mcpbrowser --help`) and the docs
#      site (`mkdocs build --strict`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

if [ "$#" -gt 0 ]; then
  exec .venv/bin/python -m pytest "$@"
fi
.venv/bin/python -m pytest --durations=25

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
