# mcpbrowser in a container: Streamable HTTP on 0.0.0.0:8931 with a token by default,
# `--stdio` for one client over stdin/stdout. docs/container.md says how to build
# and run it; scripts/container_test.sh builds it and drives it through the MCP client.
#
#   docker build -t mcpbrowser .
#
# Where pip must reach the package index through a proxy that signs with its own CA
# (as on our test machines), pass the index and mount the CA bundle (podman; docs/container.md):
#   podman build --format docker --build-arg PIP_INDEX_URL=... --build-arg PIP_CERT=/run/host-ca.crt \
#     -v /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro -t mcpbrowser .

# -- build: a virtualenv with mcpbrowser and waitress, copied whole into the final stage ----
FROM debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
ARG PIP_INDEX_URL
ARG PIP_CERT
COPY setup.py setup.cfg README.md /src/
COPY mcpbrowser /src/mcpbrowser
# An empty build argument is still set in the environment, and pip would read it as "no
# index" or "no CA file": unset the ones not given. pip and setuptools go afterwards: nothing
# runs them in the image.
RUN [ -n "$PIP_INDEX_URL" ] || unset PIP_INDEX_URL; [ -n "$PIP_CERT" ] || unset PIP_CERT; \
    python3 -m venv /opt/mcpbrowser \
 && /opt/mcpbrowser/bin/pip install --no-cache-dir --disable-pip-version-check --quiet '/src[http]' \
 && /opt/mcpbrowser/bin/pip uninstall --yes --quiet pip setuptools

# -- run ---------------------------------------------------------------------------------
FROM debian:bookworm-slim
# Debian's Chromium, not a browser download: it gets Debian's security updates with the image. Its headless
# shell too, which the (headless) server finds and runs at about half the whole browser's CPU; the whole one stays
# for --spare-renderer (docs/configuration.md, "Which browser").
# Fonts: Liberation (metric-compatible with Arial, Times and Courier, what Latin pages ask
# for), Noto CJK (the zh messages and Chinese, Japanese and Korean pages; 91 MB, the largest
# part after Chromium) and Noto Color Emoji. libatomic1: Playwright's Node.js (the browser's
# launcher) needs it. tini is PID 1: it forwards `docker stop`'s SIGTERM to the server and
# reaps the browser's orphaned helpers.
# --no-install-recommends also leaves out chromium-sandbox (the setuid helper): see the
# sandbox note below.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 libatomic1 chromium chromium-headless-shell fonts-liberation fonts-noto-cjk fonts-noto-color-emoji tini ca-certificates \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 1000 --shell /usr/sbin/nologin mcp \
 && mkdir /data && chown mcp:mcp /data
COPY --from=build /opt/mcpbrowser /opt/mcpbrowser
COPY scripts/container_entrypoint.sh /usr/local/bin/mcpbrowser-entrypoint

# The history (history.db, its key for sealed logins) and saved files (/data/files) live on
# the volume, so `docker stop` and a new container resume sessions from it.
# Chromium's sandbox: off, as Playwright launches it everywhere (--no-sandbox). Chromium's
# namespace sandbox needs user namespaces, which Docker's default seccomp profile refuses to
# an unprivileged container, and the setuid helper would need a setuid binary in the image.
# What that costs: a renderer exploit runs as the unprivileged `mcp` user of this container,
# not in Chromium's per-renderer jail; it can reach what that user can (/data and the network
# the container is given), not the host. docs/container.md says how to narrow it.
# --block-private-networks is on: see docs/container.md for reaching a named private host.
ENV PATH=/opt/mcpbrowser/bin:$PATH \
    MCPBROWSER_HEADLESS=true \
    MCPBROWSER_BLOCK_PRIVATE_NETWORKS=true \
    MCPBROWSER_DB=/data/history.db \
    PYTHONUNBUFFERED=1
VOLUME /data
USER mcp
WORKDIR /data
EXPOSE 8931
# /healthz answers 200 with no token and says nothing else; in --stdio mode there is no
# HTTP server, and the check is skipped (stdio's client notices a dead server itself).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["mcpbrowser-entrypoint", "--healthcheck"]
ENTRYPOINT ["/usr/bin/tini", "--", "mcpbrowser-entrypoint"]
