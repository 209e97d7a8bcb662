import { defineConfig } from 'drizzle-kit';

// The PostgreSQL schema and its migrations, beside the SQLite ones (drizzle.config.ts).
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/schema-pg/index.ts',
  out: './db/migrations-pg',
});
