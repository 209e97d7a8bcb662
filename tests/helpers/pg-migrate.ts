// Applies the pg migrations to the database at the URL given (the test template; tests/helpers/pg.ts).
import { applyPgMigrations } from '../../src/platform/pg';

await applyPgMigrations(process.argv[2]!);
