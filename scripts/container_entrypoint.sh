#!/bin/sh
# The container image's entry point (Dockerfile), run by tini as the unprivileged `mcp` user.
#   (no arguments, or flags)  Streamable HTTP on 0.0.0.0:8931 (--http HOST:PORT moves it), tokens required
#   --stdio [flags]           one client over stdin/stdout: docker run -i --rm IMAGE --stdio
#   --healthcheck             the image's HEALTHCHECK: GET /healthz of the HTTP server (no token)
#   --help, --version, --print-config  passed to mcpbrowser as they are
# Every other flag goes to mcpbrowser after the image's own, so it wins.
set -eu

TOKEN_SECRET=/run/secrets/mcpbrowser_tokens  # where `docker run --secret` and compose put a secret
HEALTH_URL_FILE=/tmp/mcpbrowser-health-url   # what --healthcheck asks; absent in stdio mode

if [ "${1:-}" = "--healthcheck" ]; then
  [ -f "$HEALTH_URL_FILE" ] || exit 0  # stdio: no HTTP server; its client sees a dead server itself
  exec python3 -c 'import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=4).read()' "$(cat "$HEALTH_URL_FILE")"
fi

if [ ! -w /data ]; then
  echo "mcpbrowser: error: /data is not writable by uid $(id -u): mount a volume there" \
       "(-v mcpbrowser-data:/data), or chown a host directory to $(id -u) before mounting it" >&2
  exit 2
fi

if [ "${1:-}" = "--stdio" ]; then
  shift
  exec mcpbrowser "$@"
fi

address=0.0.0.0:8931
tokens_given=${MCPBROWSER_HTTP_TOKENS:-}${MCPBROWSER_HTTP_TOKEN_FILE:-}
previous=
for arg in "$@"; do
  case "$arg" in
    --help|-h|--version|--print-config) exec mcpbrowser "$@" ;;
    --http=*) address=${arg#--http=} ;;
    --http-tokens|--http-tokens=*|--http-token-file|--http-token-file=*) tokens_given=yes ;;
  esac
  [ "$previous" = "--http" ] && address=$arg
  previous=$arg
done

if [ -z "$tokens_given" ] && [ -e "$TOKEN_SECRET" ]; then
  if [ ! -r "$TOKEN_SECRET" ]; then
    # Not "make it readable by everyone": on the host, every user would then read every token.
    cat >&2 <<EOF
mcpbrowser: error: $TOKEN_SECRET is not readable by uid $(id -u), the container's user.
Keep the file private and let only this user in, one of:
  - a group no user of the host is in (8931 if \`getent group 8931\` shows none):
    sudo chgrp 8931 tokens && chmod 0640 tokens,  then docker run --group-add 8931 ...
  - a secret the engine hands to this user:  podman secret create mcpbrowser_tokens tokens,
    then podman run --secret mcpbrowser_tokens,uid=$(id -u),mode=0400 ...
    (a swarm service: --secret source=mcpbrowser_tokens,uid=$(id -u),mode=0400)
Not a file everyone may read: every user of the host would read every token.
EOF
    exit 2
  fi
  export MCPBROWSER_HTTP_TOKEN_FILE="$TOKEN_SECRET"
  tokens_given=yes
fi
if [ -z "$tokens_given" ]; then
  cat >&2 <<EOF
mcpbrowser: error: the HTTP server listens on $address, reachable from outside the container,
and needs a bearer token for each client. Give one of:
  - a token file (lines 'name token', tokens of 16 characters or more) as the secret
    mcpbrowser_tokens:  -v "\$PWD/tokens:$TOKEN_SECRET:ro"   (or --secret / compose secrets)
  - the variable MCPBROWSER_HTTP_TOKENS=name:token,...:  -e MCPBROWSER_HTTP_TOKENS
Or serve one client over stdio instead:  docker run -i --rm IMAGE --stdio
EOF
  exit 2
fi

# The health check asks the server on this container's loopback, at the port it serves.
port=${address##*:}
echo "http://127.0.0.1:$port/healthz" > "$HEALTH_URL_FILE"
exec mcpbrowser --http "$address" "$@"
