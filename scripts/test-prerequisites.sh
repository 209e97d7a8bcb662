#!/usr/bin/env bash
# What `bun run test` needs beyond the npm packages: Debian's chromium, for the tests that open the docs page
# in a real browser, and Debian's postgresql, whose server the store contracts also run on (a throwaway
# cluster; without it they run on SQLite only and say so). Installed when missing if we can (root, or
# passwordless sudo); otherwise a clear message.
set -euo pipefail
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"; else return 1; fi; }
have_pg() { compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && command -v psql >/dev/null 2>&1; }
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
have_pg || missing+=(postgresql)
if [ "${#missing[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's ${missing[*]} for the tests (apt-get install ${missing[*]})..." >&2
  if as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null || true
  fi
fi
have_pg || echo "The store contracts will run on SQLite only: Debian's postgresql is not installed (apt-get install postgresql)." >&2
if [ -x /usr/bin/chromium ]; then exit 0; fi
echo "The browser tests need Debian's chromium at /usr/bin/chromium. Install it as root (apt-get install chromium), then run the tests again." >&2
exit 1
