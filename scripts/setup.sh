#!/usr/bin/env bash
# Install what mcpbrowser needs on a fresh machine; safe to run again.
#   bash scripts/setup.sh        the server: a virtualenv in .venv with mcpbrowser, its HTTP server
#                                (waitress, for --http) and the MCP client the demo drives it with
#   bash scripts/setup.sh test   that, and the test tools: the test extra, tox (scripts/test.sh)
# and either way a Chromium, if none is found: Debian's package when root, else Playwright's own.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
case "${1:-server}" in
  server) extras=http,demo; tools="" ;;
  # tox-uv: tox's environments built by uv, 3-7 s each instead of ~26 s with pip, which keeps
  # the whole suite (four tox environments of other Pythons and checks) inside its budget.
  test) extras=http,demo,test; tools="tox tox-uv" ;;
  *) echo "setup: unknown argument '$1' (give nothing for the server and the demo, or 'test')" >&2; exit 2 ;;
esac
# One stamp per level: what was installed, for these setup files. A test setup holds the server's too.
want=$(cat setup.cfg setup.py scripts/setup.sh | sha1sum | cut -d' ' -f1)
stamp=".venv/.mcpbrowser-${1:-server}"

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)" >&2
  "$PYTHON" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing mcpbrowser[$extras]${tools:+ $tools} into .venv" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]" $tools
  echo "$want" > .venv/.mcpbrowser-server
  echo "$want" > "$stamp"
fi

chromium_for() {  # the Chromium the server runs: `chromium_for` the whole browser, `chromium_for shell` a headless one
  local shell=False; [ "${1:-}" = shell ] && shell=True
  .venv/bin/python -c "from mcpbrowser.core.browser_process import find_executable as f; print(f('chromium', shell=$shell))" 2>/dev/null
}
as_root_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }
if chromium=$(chromium_for); then
  echo "setup: using Chromium at $chromium" >&2
elif as_root_apt; then
  echo "setup: no Chromium found; installing Debian's chromium and chromium-headless-shell packages" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-headless-shell >/dev/null
else
  echo "setup: no Chromium found; installing Playwright's Chromium (and its headless shell)" >&2
  .venv/bin/python -m playwright install chromium
fi
# Headless, the server runs Chromium's headless shell when there is one: the same engine at about half the CPU
# (docs/performance.md). A machine without it still works, on the whole browser. Playwright's whole browser comes
# before a system shell (its version): beside it, only Playwright's own shell is used.
if [ "$(chromium_for shell)" = "$(chromium_for)" ]; then
  case "$(chromium_for)" in
    */ms-playwright/*)
      echo "setup: installing Playwright's headless shell beside its Chromium (headless runs take about half the CPU)" >&2
      .venv/bin/python -m playwright install chromium-headless-shell \
        || echo "setup: the headless shell could not be installed; headless runs use the whole Chromium" >&2 ;;
    *)
      if as_root_apt; then
        echo "setup: installing Debian's chromium-headless-shell (headless runs take about half the CPU)" >&2
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null; } \
          || echo "setup: chromium-headless-shell could not be installed; headless runs use the whole Chromium" >&2
      else
        echo "setup: no headless shell; headless runs use the whole Chromium (about twice the CPU):" \
          "python -m playwright install chromium-headless-shell adds one" >&2
      fi ;;
  esac
fi
echo "setup: headless runs use $(chromium_for shell)" >&2
# The test extra's one system tool: strace, with which an attack test reads what the browser sends past the proxy
# (tests/test_policy_attacks.py; it skips without it, saying so).
if [ "${1:-server}" = test ] && ! command -v strace >/dev/null && as_root_apt; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null 2>&1 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null 2>&1; } \
    || echo "setup: strace could not be installed; one attack test will skip" >&2
fi
