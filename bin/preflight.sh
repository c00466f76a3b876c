#!/usr/bin/env bash
# Pre-flight of the test command: brings what the tests need (Java for DynamoDB Local,
# chromium for the console's browser tests, tmux for the watch command's terminal test).
# As root with apt-get it installs what is missing; elsewhere (or with PREFLIGHT_NO_INSTALL=1)
# it stops before any test runs, one line per missing part with the command that installs it.
# CHROMIUM_PATH names the browser (default /usr/bin/chromium), as the tests read it.
set -euo pipefail
chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
missing=()
command -v java >/dev/null 2>&1 || missing+=("java|openjdk-17-jre-headless|DynamoDB Local needs a Java 17+ runtime")
[ -x "$chromium" ] || missing+=("chromium|chromium|the console's browser tests need $chromium")
command -v tmux >/dev/null 2>&1 || missing+=("tmux|tmux|the watch command's terminal test needs tmux")
[ ${#missing[@]} -eq 0 ] && exit 0

can_install=0
if [ "${PREFLIGHT_NO_INSTALL:-}" != "1" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  can_install=1
fi
if [ "$can_install" = "1" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  for entry in "${missing[@]}"; do
    IFS='|' read -r part pkg why <<<"$entry"
    echo "preflight: $part not found ($why); installing Debian's $pkg"
    apt-get install -y -qq "$pkg" >/dev/null
  done
  exit 0
fi
echo "preflight: the tests cannot run on this machine yet; nothing was run. Missing:" >&2
for entry in "${missing[@]}"; do
  IFS='|' read -r part pkg why <<<"$entry"
  echo "preflight: missing $part ($why): sudo apt-get install -y $pkg" >&2
done
exit 1
