#!/usr/bin/env bash
# Browser tests drive Debian's Chromium through Playwright (never a downloaded browser build).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "setup: installing Debian's chromium for the browser tests" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) >&2
else
  echo "setup: /usr/bin/chromium is missing; install Debian's 'chromium' package (as root: apt-get install chromium)" >&2
  exit 1
fi
