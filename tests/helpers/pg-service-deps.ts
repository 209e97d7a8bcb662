// The least a service needs to run on a PostgreSQL database of its own, for the tests that call a module's
// services and stores on PostgreSQL directly (many callers at once): the pool, a fixed clock, a vault, silent
// logs, metrics, and the processors a test gives. Adapters a test does not give throw when touched.
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { Processors, type Processor } from '../../src/adapters/processors';
import type { Ctx, Deps } from '../../src/deps';
import { FakeClock } from '../../src/platform/clock';
import { createLogger } from '../../src/platform/logger';
import { Metrics } from '../../src/platform/metrics';
import { openPg, type PgHandle } from '../../src/platform/pg';
import { Vault } from '../../src/platform/vault';
import { freshPgDatabase } from './pg';
import { pgStores } from '../../src/stores';
import { pgEngine } from '../../src/engine-services';

export interface PgServiceDeps {
  deps: Deps;
  /** The database's URL. */
  url: string;
  pg: PgHandle;
  clock: FakeClock;
  /** A lender of its own (a row in lenders), as a service's caller. */
  newLender(): Promise<Ctx>;
  close(): Promise<void>;
}

const absent = (what: string) =>
  new Proxy({}, {
    get(_t, p) {
      if (p === 'then') return undefined;
      throw new Error(`${what} is not given to this test (${String(p)})`);
    },
  });

let lenders = 0;

/**
 * A fresh database cloned from the migrated template, and deps on it; `max` connections in the pool. With
 * `replicaOf`, another replica on that one's database instead: a pool of its own, the same vault key (as
 * VAULT_KEY gives every replica), a clock of its own at the same time; its close leaves the database.
 */
export function pgServiceDeps(opts: { processor?: Processor; max?: number; replicaOf?: PgServiceDeps } = {}): PgServiceDeps {
  const db = opts.replicaOf ? { url: opts.replicaOf.url, drop() {} } : freshPgDatabase();
  const pg = openPg(db.url, { max: opts.max ?? 10 });
  const clock = new FakeClock(opts.replicaOf?.clock.now() ?? Date.UTC(2026, 10, 21, 12));
  const vault = opts.replicaOf?.deps.vault ?? new Vault(randomBytes(32));
  const logger = createLogger('silent');
  const deps = {
    config: absent('config'),
    sqlite: absent('sqlite'),
    db: undefined as never,
    reader: undefined as never,
    pg,
    clock,
    vault,
    logger,
    engine: pgEngine({ db: undefined as never, pg }, vault, logger),
    metrics: new Metrics(),
    pageTokens: absent('pageTokens'),
    bank: absent('bank'),
    linked: absent('linked'),
    routing: absent('routing'),
    processors: opts.processor ? new Processors({ sandbox: () => opts.processor!, stripe: () => opts.processor! }) : absent('processors'),
    stores: pgStores,
    balanceResults: absent('balanceResults'),
    enrollmentChanges: absent('enrollmentChanges'),
  } as unknown as Deps;
  return {
    deps,
    url: db.url,
    pg,
    clock,
    async newLender() {
      const id = `lender-${process.pid}-${++lenders}`;
      await pg.db.execute(sql`INSERT INTO lenders (id, name, created_at) VALUES (${id}, ${id}, ${clock.now()})`);
      return { lender: { id, name: id, debitCardApproved: false }, deps };
    },
    async close() {
      await pg.close();
      db.drop();
    },
  };
}
