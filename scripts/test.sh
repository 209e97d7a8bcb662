#!/usr/bin/env bash
# `bun run test`: the whole suite on SQLite; with DATABASE_URL=postgres://… the whole suite on PostgreSQL.
# A test file whose first line is a tag runs on one engine only:
#   // engine: sqlite     it tests SQLite itself (the file lock, WAL checkpoints, the write gate), or sets up its
#                         data in SQLite terms (the reason follows the tag then): not run on PostgreSQL
#   // engine: postgres   it tests PostgreSQL itself (concurrent transactions): on SQLite it only says so
#   // engine: once       it does not touch a database (the architecture checks): run in the SQLite run only
# The files left out are counted and named before the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/test-prerequisites.sh
if [[ "${DATABASE_URL:-}" =~ ^postgres(ql)?:// ]]; then
  files=()
  skipped=()
  while IFS= read -r f; do
    tag="$(head -n1 "$f")"
    if [[ "$tag" == "// engine: sqlite"* ]] || [ "$tag" = "// engine: once" ]; then skipped+=("$f"); else files+=("./$f"); fi
  done < <(find tests -name '*.test.ts' | sort)
  echo "PostgreSQL run: ${#files[@]} test files; ${#skipped[@]} left out (tagged sqlite or once):"
  printf '  %s\n' "${skipped[@]}"
  # Slower per test there: a test's own reads and writes of the database go through psql, one process each.
  exec bun test --timeout 90000 "${files[@]}" "$@"
fi
exec bun test --timeout 30000 "$@"
