#!/usr/bin/env bash
# Set up (idempotent), then drive the server through the official MCP client and print each step.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python scripts/demo.py "$@"
