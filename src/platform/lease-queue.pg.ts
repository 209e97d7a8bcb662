import { getTableName, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import { transaction } from './context';
import type { Claim } from './lease-queue';
import { newLeaseToken } from './lease-token';
import { arrayTypeOf, type PgDb } from './pg';
import { listOf, readerOf, rows, writerOf } from './sql/pg';
import type { StoreCtx, TxCtx } from './store';

// A work queue kept in a PostgreSQL table, claimed by leases: lease-queue.ts's queue, on the other engine, over
// a table of the same convention (state 'pending' while there is work, attempts, next_attempt_at, lease_until
// 0 when nobody holds the row, lease_token naming the claim that does), with the same methods: claim, finish,
// release. A row is due when it is pending, its time has come and no live lease holds it.
//
// Replicas claim side by side under READ COMMITTED, so a claim says in its statement what SQLite's single
// writer gave for free: the rows it picks are locked as they are picked, rows another claim holds locked are
// passed over (FOR UPDATE SKIP LOCKED), and those it took are leased in the same statement. Two claimers never
// take the same row and neither waits for the other; a row another claim leased and committed meanwhile is
// read again and is no longer due. A finish changes a row only while its claim still holds it (its token). A
// replica that stops loses its rows when their leases run out; when it starts again it lets go of its own at
// once (release: the rows whose tokens carry its prefix), never of another live replica's.
//
// Which due rows a claim takes is the queue's strategy, as on SQLite: oldest first by default, or the
// feature's own (fair shares per lender for balance reads, an attempt row opened for each delivery).

type QueueColumns = {
  state: PgColumn;
  attempts: PgColumn;
  nextAttemptAt: PgColumn;
  leaseUntil: PgColumn;
  leaseToken: PgColumn;
};
export type QueueTable = PgTable & QueueColumns & { id: PgColumn };

/** What a strategy picks with, inside the claim. */
export interface Picking<Input> {
  /** The claim's handle: the transaction it runs in, or the pool for a claim of one statement outside one. */
  db: PgDb;
  want: number;
  now: number;
  /** What the caller gave this claim (the deliveries a run already holds, say). */
  input: Input;
  /** The queue's table, by name. */
  table: SQL;
  /** The condition of a due row, over the table's own columns. */
  due: SQL;
  /**
   * The common table expressions of a lease: `picked`, the rows `pick` selects (`SELECT id FROM <table> WHERE …
   * ORDER BY … LIMIT n`), locked as they are picked, those another claim holds passed over; and `leased`, those
   * rows leased to this claim, returning `returning`. For a strategy that writes more in the same statement.
   */
  leasing(pick: SQL, returning: SQL): SQL;
  /** `leasing`, run on its own: the rows leased, as `returning` names them. */
  lease<R>(pick: SQL, returning: SQL): Promise<R[]>;
}

/** Picks up to `want` due rows and leases them (through `leasing` or `lease`): the rows claimed, token aside. */
export type PickStrategy<Row, Input = void> = (p: Picking<Input>) => Promise<Row[]>;

/** A claim's end: its row's new state ('pending' keeps it in the queue), attempts, next time and further columns. */
export interface Finish {
  state: string;
  attempts?: number;
  nextAttemptAt?: number | null;
  /** Further columns of the row to set, by their Drizzle names. */
  set?: { [column: string]: unknown };
}

export interface QueueOptions<Row, Input> {
  /** How long a claim holds its rows; per claim when it depends on what the claim was given. */
  leaseMs: number | ((input: Input) => number);
  pick: PickStrategy<Row, Input>;
  /**
   * 'one': the strategy's claim is one statement, atomic on its own: run in the caller's transaction, or alone.
   * 'several': its statements run in one transaction, the caller's or one of the claim's own.
   */
  statements: 'one' | 'several';
}

type InputArgs<Input> = [Input] extends [void] ? [] : [input: Input];

export class LeaseQueue<T extends QueueTable, Row, Input = void> {
  readonly name: string;
  private readonly tableName: SQL;
  private readonly col: Record<keyof QueueColumns | 'id', SQL>;

  constructor(
    private readonly table: T,
    private readonly opts: QueueOptions<Row, Input>,
  ) {
    this.name = getTableName(table);
    this.tableName = sql.raw(this.name);
    this.col = {
      id: sql.raw(table.id.name),
      state: sql.raw(table.state.name),
      attempts: sql.raw(table.attempts.name),
      nextAttemptAt: sql.raw(table.nextAttemptAt.name),
      leaseUntil: sql.raw(table.leaseUntil.name),
      leaseToken: sql.raw(table.leaseToken.name),
    };
  }

  /** The condition of a due row at `now`. */
  due(now: number): SQL {
    const c = this.col;
    return sql`${c.state} = 'pending' AND ${c.nextAttemptAt} <= ${now} AND ${c.leaseUntil} <= ${now}`;
  }

  /**
   * Leases up to `want` due rows, chosen by the strategy, until now + leaseMs, all under one new token: in the
   * caller's transaction, or (a claim of one statement) alone, or (of several) in a transaction of its own.
   */
  async claim(c: StoreCtx, want: number, now: number, ...args: InputArgs<Input>): Promise<(Row & { leaseToken: string })[]> {
    const input = args[0] as Input;
    const leaseToken = newLeaseToken();
    const until = now + (typeof this.opts.leaseMs === 'function' ? this.opts.leaseMs(input) : this.opts.leaseMs);
    const col = this.col;
    // `picked` is read once, its rows locked, before `leased` writes them: the picking is never run again for a
    // row the update looks at.
    const leasing = (pick: SQL, returning: SQL): SQL =>
      sql`picked AS MATERIALIZED (${pick} FOR UPDATE SKIP LOCKED),
        leased AS (UPDATE ${this.tableName} SET ${col.leaseUntil} = ${until}, ${col.leaseToken} = ${leaseToken}
                    WHERE ${col.id} IN (SELECT id FROM picked) RETURNING ${returning})`;
    const run = (db: PgDb) =>
      this.opts.pick({
        db,
        want,
        now,
        input,
        table: this.tableName,
        due: this.due(now),
        leasing,
        lease: <R>(pick: SQL, returning: SQL) => rows<R>(db, sql`WITH ${leasing(pick, returning)} SELECT * FROM leased`),
      });
    const picked =
      this.opts.statements === 'several' ? await transaction({ deps: c.deps, tx: c.tx }, (tx) => run(writerOf(tx))) : await run(readerOf(c));
    return picked.map((r) => ({ ...r, leaseToken }));
  }

  /**
   * Ends a claim in the caller's transaction: the row's new state (and attempt count, next time, other
   * columns), its lease released. Only while the claim still holds the row: false when its lease ran out and
   * another claim took it (that claim finishes it).
   */
  async finish(c: TxCtx, claim: Claim, f: Finish): Promise<boolean> {
    const columns = this.table as unknown as Record<string, PgColumn>;
    const sets = [
      sql`${this.col.state} = ${f.state}`,
      ...(f.attempts !== undefined ? [sql`${this.col.attempts} = ${f.attempts}`] : []),
      ...(f.nextAttemptAt !== undefined ? [sql`${this.col.nextAttemptAt} = ${f.nextAttemptAt}`] : []),
      ...Object.entries(f.set ?? {}).map(([k, v]) => sql`${sql.raw(columns[k]!.name)} = ${v}`),
    ];
    const done = await rows<{ id: unknown }>(
      writerOf(c),
      sql`UPDATE ${this.tableName} SET ${sql.join(sets, sql`, `)}, ${this.col.leaseUntil} = 0, ${this.col.leaseToken} = NULL
           WHERE ${this.col.id} = ${claim.id} AND ${this.col.leaseToken} = ${claim.leaseToken} RETURNING ${this.col.id}`,
    );
    return done.length === 1;
  }

  /**
   * Many claims ended at once, as `finish` one after the other would: the finishes of one shape (the columns
   * they set) in one UPDATE over arrays bound as parameters, each only while its claim holds its row; a row
   * finished twice in one call ends as its last finish says. `whilePending`: and only while the row is still
   * pending (a final state recorded meanwhile never moves back).
   */
  async finishAll(c: TxCtx, finishes: readonly (Claim & { finish: Finish })[], opts: { whilePending?: boolean } = {}): Promise<void> {
    const last = new Map<string | number, { token: string; finish: Finish }>();
    for (const f of finishes) {
      last.delete(f.id);
      last.set(f.id, { token: f.leaseToken, finish: f.finish });
    }
    const columns = this.table as unknown as Record<string, PgColumn>;
    const groups = new Map<string, { names: string[]; types: string[]; values: unknown[][]; ids: (string | number)[]; tokens: string[] }>();
    for (const [id, { token, finish: f }] of last) {
      const extra = Object.entries(f.set ?? {});
      const cols = [
        this.table.state,
        ...(f.attempts !== undefined ? [this.table.attempts] : []),
        ...(f.nextAttemptAt !== undefined ? [this.table.nextAttemptAt] : []),
        ...extra.map(([k]) => columns[k]!),
      ];
      const key = cols.map((col) => col.name).join(',');
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { names: cols.map((col) => col.name), types: cols.map(arrayTypeOf), values: cols.map(() => []), ids: [], tokens: [] }));
      const vals = [f.state, ...(f.attempts !== undefined ? [f.attempts] : []), ...(f.nextAttemptAt !== undefined ? [f.nextAttemptAt] : []), ...extra.map(([, v]) => v)];
      vals.forEach((v, i) => g.values[i]!.push(v ?? null));
      g.ids.push(id);
      g.tokens.push(token);
    }
    const db = writerOf(c);
    const stillPending = opts.whilePending ? sql` AND t.${this.col.state} = 'pending'` : sql``;
    for (const g of groups.values()) {
      const sets = sql.join(
        g.names.map((n) => sql`${sql.identifier(n)} = v.${sql.identifier(n)}`),
        sql`, `,
      );
      const arrays = sql.join(
        g.values.map((vals, i) => sql`${listOf(vals)}::${sql.raw(g.types[i]!)}`),
        sql`, `,
      );
      const names = sql.join(
        g.names.map((n) => sql.identifier(n)),
        sql`, `,
      );
      await db.execute(
        sql`UPDATE ${this.tableName} AS t SET ${sets}, ${this.col.leaseUntil} = 0, ${this.col.leaseToken} = NULL
              FROM unnest(${listOf(g.ids)}::${sql.raw(arrayTypeOf(this.table.id))}, ${listOf(g.tokens)}::text[], ${arrays}) AS v(id, lease_token, ${names})
             WHERE t.${this.col.id} = v.id AND t.${this.col.leaseToken} = v.lease_token${stillPending}`,
      );
    }
  }

  /**
   * At start, the leases this replica held before it stopped let go (their tokens start with `prefix`: see
   * lease-token.ts): its rows are due again at once. Another replica's may be alive, and are taken over only
   * when their leases run out. How many were let go.
   */
  async release(c: TxCtx, prefix: string): Promise<number> {
    const col = this.col;
    const released = await rows<{ id: unknown }>(
      writerOf(c),
      sql`UPDATE ${this.tableName} SET ${col.leaseUntil} = 0, ${col.leaseToken} = NULL
           WHERE ${col.state} = 'pending' AND ${col.leaseUntil} > 0 AND starts_with(${col.leaseToken}, ${prefix}) RETURNING ${col.id}`,
    );
    return released.length;
  }
}

/**
 * The default strategy: the oldest due rows first (by next_attempt_at, then id), each returned as `returning`
 * names it (which must name next_attempt_at and id: the claim is answered in that order), then made a Row.
 */
export function oldestDueFirst<Row, Raw = Record<string, unknown>>(returning: SQL, toRow: (raw: Raw) => Row): PickStrategy<Row> {
  return async ({ db, want, table, due, leasing }) => {
    const pick = sql`SELECT id FROM ${table} WHERE ${due} ORDER BY next_attempt_at, id LIMIT ${want}`;
    const leased = await rows<Raw>(db, sql`WITH ${leasing(pick, returning)} SELECT * FROM leased ORDER BY next_attempt_at, id`);
    return leased.map(toRow);
  };
}
