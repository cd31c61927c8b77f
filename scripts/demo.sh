#!/usr/bin/env bash
# Set up the server and its MCP client (idempotent; no test tools), then drive the server through the client and print each step.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python scripts/demo.py "$@"
