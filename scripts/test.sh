#!/usr/bin/env bash
# Set up (idempotent), then run the whole test suite:
#   1. the full suite on the project's .venv (extra arguments go to pytest, and
#      then only this step runs);
#   2. tox: a fast subset on the other Python versions (3.10, 3.12, 3.13), ruff,
#      and the packaging check (wheel contents, `pipx run --spec . mcpbrowser --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

if [ "$#" -gt 0 ]; then
  exec .venv/bin/python -m pytest "$@"
fi
.venv/bin/python -m pytest

# pyenv exposes python3.X only for the versions listed in PYENV_VERSION; keep the
# current one first so that `python3` itself does not change.
if command -v pyenv >/dev/null 2>&1; then
  others=$(pyenv versions --bare | grep -E '^3\.1[0-3]\.[0-9]+$' | grep -vx "$(pyenv version-name)" | tr '\n' ':')
  export PYENV_VERSION="$(pyenv version-name):${others%:}"
fi
FAST="tests/test_threads.py tests/test_properties.py tests/test_store.py tests/test_config.py tests/test_tools.py"
.venv/bin/tox -e py310,py312,py313 -- $FAST
.venv/bin/tox -e lint,package
