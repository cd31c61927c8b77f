#!/usr/bin/env bash
# Install everything mcpbrowser needs on a fresh machine; safe to run again.
#   - a virtualenv in .venv with mcpbrowser and its test extra (from PyPI)
#   - a Chromium, if none is found: Debian's package when root, else Playwright's own
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
stamp=.venv/.mcpbrowser-installed
want=$(cat setup.cfg setup.py scripts/setup.sh | sha1sum | cut -d' ' -f1)

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)" >&2
  "$PYTHON" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing mcpbrowser and its test dependencies into .venv" >&2
  # tox-uv: tox's environments built by uv, 3-7 s each instead of ~26 s with pip, which keeps
  # the whole suite (four tox environments of other Pythons and checks) inside its budget.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]' tox tox-uv
  echo "$want" > "$stamp"
fi

if chromium=$(.venv/bin/python -c 'from mcpbrowser.core.browser_process import find_executable; print(find_executable("chromium"))' 2>/dev/null); then
  echo "setup: using Chromium at $chromium" >&2
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "setup: no Chromium found; installing Debian's chromium package" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "setup: no Chromium found; installing Playwright's Chromium" >&2
  .venv/bin/python -m playwright install chromium
fi
