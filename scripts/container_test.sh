#!/usr/bin/env bash
# Build the container image (Dockerfile) and run tests/test_container.py against it: the
# official MCP client drives the running container from outside, over HTTP and over stdio.
#   bash scripts/container_test.sh            build (when the sources changed), then test
#   bash scripts/container_test.sh -k stdio   pytest arguments narrow the tests
#   bash scripts/container_test.sh --digest   print the sources' digest that labels the image
# The engine: docker when its daemon answers, else podman (installed with apt-get when
# root; MCPBROWSER_ENGINE overrides). The base image debian:bookworm-slim is pulled, or,
# where no image registry is reachable, made with debootstrap from Debian's packages.
# Not part of scripts/test.sh (CI): a build takes 4-7 minutes on a loaded 2-core machine.
# The suite runs tests/test_container.py whenever an image built from the same sources is
# present, and skips it, saying why, when it is not.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${MCPBROWSER_IMAGE:-mcpbrowser:test}
BASE=debian:bookworm-slim
LABEL=org.mcpbrowser.source

digest() {  # what the image is built from; README.md is in the build only as the package's description
  find Dockerfile .dockerignore setup.py setup.cfg scripts/container_entrypoint.sh mcpbrowser -type f \
    ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}
if [ "${1:-}" = "--digest" ]; then
  digest
  exit 0
fi

if [ -n "${MCPBROWSER_ENGINE:-}" ]; then
  ENGINE=$MCPBROWSER_ENGINE
elif command -v docker >/dev/null && timeout 30 docker info >/dev/null 2>&1; then
  ENGINE=docker
else
  if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v debootstrap >/dev/null; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
      echo "container_test: no docker daemon and no podman, and cannot install podman (needs root and apt-get)" >&2
      exit 1
    fi
    echo "container_test: installing podman, runc and debootstrap" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap >/dev/null
  fi
  # Rootful podman without systemd: runc and plain cgroups. (A health check's timer needs
  # systemd; without it podman logs an error per container and the test runs the check itself.)
  ENGINE="podman --runtime runc --cgroup-manager=cgroupfs"
fi
export MCPBROWSER_ENGINE=$ENGINE MCPBROWSER_IMAGE=$IMAGE
podman=false
case "$ENGINE" in podman*) podman=true ;; esac

want=$(digest)
have=$($ENGINE image inspect --format "{{ index .Config.Labels \"$LABEL\" }}" "$IMAGE" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  if ! $ENGINE image inspect "$BASE" >/dev/null 2>&1 && ! $ENGINE pull -q "$BASE" >/dev/null 2>&1; then
    # No registry: the same Debian release, minimal, from Debian's own packages, with the
    # slim image's apt sources and its rule against installing documentation.
    command -v debootstrap >/dev/null || { echo "container_test: cannot pull $BASE and no debootstrap" >&2; exit 1; }
    echo "container_test: cannot pull $BASE; making it with debootstrap" >&2
    root=$(mktemp -d)
    trap 'rm -rf "$root"' EXIT
    debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
    rm -f "$root/etc/apt/sources.list"
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      > "$root/etc/apt/sources.list.d/debian.sources"
    printf 'path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\npath-exclude /usr/share/locale/*\n' \
      > "$root/etc/dpkg/dpkg.cfg.d/docker"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/* \
           "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
    tar -C "$root" -c . | $ENGINE import --change 'CMD ["bash"]' - "docker.io/library/$BASE" >/dev/null
  fi
  build=(build --network=host -t "$IMAGE" --label "$LABEL=$want")
  # pip inside the build uses this machine's package index, and its CA bundle when a proxy
  # re-signs the index's certificate (local file:// indexes are not reachable from the build).
  index=$(python3 -m pip config get global.index-url 2>/dev/null || true)
  case "$index" in http*) build+=(--build-arg "PIP_INDEX_URL=$index") ;; esac
  if $podman; then
    # --format docker: the OCI format has no HEALTHCHECK.
    # Explicit ulimits: podman's defaults exceed what some sandboxes (ours) allow.
    build+=(--format docker --pull=never --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
    if [ -r /etc/ssl/certs/ca-certificates.crt ]; then
      build+=(-v /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro --build-arg PIP_CERT=/run/host-ca.crt)
    fi
  fi
  echo "container_test: building $IMAGE with $ENGINE" >&2
  start=$(date +%s)
  $ENGINE "${build[@]}" . >&2
  echo "container_test: built in $(( $(date +%s) - start )) s" >&2
fi
size=$($ENGINE image inspect --format '{{.Size}}' "$IMAGE")
echo "container_test: $IMAGE is $(( size / 1000000 )) MB" >&2

[ -x .venv/bin/python ] || bash scripts/setup.sh
exec .venv/bin/python -m pytest tests/test_container.py -p no:randomly -v "$@"
