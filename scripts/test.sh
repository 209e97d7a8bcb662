#!/usr/bin/env bash
# `bun run test`: every test file on SQLite, and the store contracts (tests/contracts/) on SQLite and PostgreSQL
# in the same run: their PostgreSQL server is TEST_PG_URL, or a throwaway cluster the test helper starts from
# Debian's postgresql binaries (tests/helpers/pg-server.ts); without them the contracts run on SQLite only.
#
# With DATABASE_URL=postgres://… the files that test PostgreSQL itself run on it: those whose first line is
#   // engine: postgres   it tests PostgreSQL itself (concurrent transactions, replicas): on SQLite it says so
#   // engine: both       it runs on either engine, and what it tests differs between them (crashes and
#                         restarts, the migrations, transactions, the sandbox processor's own tables)
# Every store method is exercised on PostgreSQL by its contract (each contract fails otherwise), so the other
# files run on SQLite only. TEST_ALL_ON_PG=1 runs every file on PostgreSQL instead, as before, but for those
#   // engine: sqlite     it tests SQLite itself (the file lock, WAL checkpoints, the write gate), or sets up its
#                         data in SQLite terms (the reason follows the tag then)
#   // engine: once       it does not touch a database (the architecture checks)
# The files left out are counted before the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/test-prerequisites.sh
if [[ "${DATABASE_URL:-}" =~ ^postgres(ql)?:// ]]; then
  files=()
  left=0
  while IFS= read -r f; do
    tag="$(head -n1 "$f")"
    if [ "${TEST_ALL_ON_PG:-}" = 1 ]; then
      if [[ "$tag" == "// engine: sqlite"* ]] || [ "$tag" = "// engine: once" ]; then left=$((left + 1)); else files+=("./$f"); fi
    elif [[ "$tag" == "// engine: postgres"* ]] || [[ "$tag" == "// engine: both"* ]]; then
      files+=("./$f")
    else
      left=$((left + 1))
    fi
  done < <(find tests -name '*.test.ts' -not -path 'tests/contracts/*' | sort)
  echo "PostgreSQL run: ${#files[@]} test files; $left left out (run on SQLite; the store contracts run on both there)"
  # Slower per test there: a test's own writes of the database go through psql, one process each (its reads,
  # on a connection a thread of the test process keeps: tests/helpers/pg-sync.ts).
  exec bun test --timeout 90000 "${files[@]}" "$@"
fi
exec bun test --timeout 90000 "$@"
