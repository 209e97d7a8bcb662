#!/usr/bin/env bash
# What `bun run test` needs beyond the npm packages: Debian's chromium, for the tests that open the docs page
# in a real browser. Installed when missing if we can (root, or passwordless sudo); otherwise a clear message.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"; else return 1; fi; }
if command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the browser tests (apt-get install chromium)..." >&2
  if as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
    [ -x /usr/bin/chromium ] && exit 0
  fi
fi
echo "The browser tests need Debian's chromium at /usr/bin/chromium. Install it as root (apt-get install chromium), then run the tests again." >&2
exit 1
