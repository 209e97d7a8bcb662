import type { Database, SQLQueryBindings } from 'bun:sqlite';
import { getTableName } from 'drizzle-orm';
import type { SQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core';
import type { Db, Orm } from './db';
import { sqliteTransaction } from './transactions.sqlite';
import { newLeaseToken } from './lease-token';
import { handleOf } from './sql/sqlite-handle';
import type { StoreCtx, TxCtx } from './store';

// A work queue kept in a SQLite table, claimed by leases. The table follows one convention:
//   state            'pending' while there is work to do (other values are final, chosen by the feature)
//   attempts         how many times the work was tried
//   next_attempt_at  not before this time (ms)
//   lease_until      a claim holds the row until this time; 0 when nobody holds it (NOT NULL DEFAULT 0)
//   lease_token      the claim holding it (platform/lease-token.ts): a finish changes the row only while its
//                    claim still holds it, so a claim whose lease ran out and was taken again finishes nothing
// A row is due when it is pending, its time has come and no live lease holds it. Claims run in one
// BEGIN IMMEDIATE transaction, so two claimers never take the same row; a claimer that dies loses its rows
// when the lease runs out, or at once when the next process starts (one process serves a database file).
// Which due rows a claim takes is the queue's strategy: oldest first by default, or the feature's own
// (fair shares per lender for balance reads). lease-queue.pg.ts is the same queue on PostgreSQL, with the same
// methods: claim, finish, release.

type QueueColumns = {
  state: SQLiteColumn;
  attempts: SQLiteColumn;
  nextAttemptAt: SQLiteColumn;
  leaseUntil: SQLiteColumn;
  leaseToken: SQLiteColumn;
};

/** What a claim hands out with each row, and what its finish names. */
export interface Claim {
  id: string | number;
  leaseToken: string;
}
export type QueueTable = SQLiteTable & QueueColumns & { id: SQLiteColumn };

/**
 * Picks up to `want` due rows inside the claim transaction and hands them to `lease` as it goes, so a row
 * it has taken is no longer due when it looks again. `due` is the SQL condition of a due row (`?1` = now);
 * `input` is what the caller gave this claim.
 */
export type PickStrategy<Row, Input = void> = (c: { db: Orm; want: number; now: number; due: string; input: Input; lease(rows: Row[]): void }) => void;

type InputArgs<Input> = [Input] extends [void] ? [] : [input: Input];

export interface Finalize<T extends QueueTable> {
  /** The new state; 'pending' keeps it in the queue (a retry). */
  state: string;
  attempts?: number;
  nextAttemptAt?: number | null;
  /** Further columns of the row to set, by their Drizzle names. */
  set?: Partial<Record<Exclude<keyof T['_']['columns'], keyof QueueColumns | 'id'>, SQLQueryBindings>>;
}

export class LeaseQueue<T extends QueueTable, Row extends { id: string | number }, Input = void> {
  readonly name: string;
  private readonly col: Record<keyof QueueColumns | 'id', string>;
  private readonly sqlite: Database;
  private readonly leaseStmt;
  private readonly finalizeStmts = new Map<string, ReturnType<Database['query']>>();

  constructor(
    private readonly db: Db,
    private readonly table: T,
    private readonly opts: { leaseMs: number | ((input: Input) => number); pick: PickStrategy<Row, Input> },
  ) {
    this.sqlite = db.$client;
    this.name = getTableName(table);
    this.col = {
      id: table.id.name,
      state: table.state.name,
      attempts: table.attempts.name,
      nextAttemptAt: table.nextAttemptAt.name,
      leaseUntil: table.leaseUntil.name,
      leaseToken: table.leaseToken.name,
    };
    this.leaseStmt = this.sqlite.query<unknown, [number, string, string | number]>(
      `UPDATE ${this.name} SET ${this.col.leaseUntil} = ?, ${this.col.leaseToken} = ? WHERE ${this.col.id} = ?`,
    );
  }

  /** The SQL condition of a due row, with `?1` bound to now. */
  get dueCondition(): string {
    const c = this.col;
    return `${c.state} = 'pending' AND ${c.nextAttemptAt} <= ?1 AND ${c.leaseUntil} <= ?1`;
  }

  /**
   * Leases up to `want` due rows, chosen by the strategy, until now + leaseMs, all under one new token: in the
   * caller's transaction, or its own.
   */
  claim(c: StoreCtx, want: number, now: number, ...args: InputArgs<Input>): Promise<(Row & { leaseToken: string })[]> {
    const input = args[0] as Input;
    return sqliteTransaction(this.db, { tx: c.tx }, ({ tx }) => {
      const claimed: (Row & { leaseToken: string })[] = [];
      const until = now + (typeof this.opts.leaseMs === 'function' ? this.opts.leaseMs(input) : this.opts.leaseMs);
      const leaseToken = newLeaseToken();
      this.opts.pick({
        db: handleOf(tx),
        want,
        now,
        input,
        due: this.dueCondition,
        lease: (rows) => {
          for (const r of rows) {
            this.leaseStmt.run(until, leaseToken, r.id);
            claimed.push({ ...r, leaseToken });
          }
        },
      });
      return claimed;
    });
  }

  /**
   * Ends a claim in the caller's transaction: the row's new state (and attempt count, next time, other columns),
   * lease released. Only while the claim still holds the row: false when its lease ran out and another claim
   * took it (that claim finishes it).
   */
  finish(_c: TxCtx, claim: Claim, f: Finalize<T>): boolean {
    const columns = this.table as unknown as Record<string, SQLiteColumn>;
    const extra = Object.entries(f.set ?? {}) as [string, SQLQueryBindings][];
    const names = [
      this.col.state,
      ...(f.attempts !== undefined ? [this.col.attempts] : []),
      ...(f.nextAttemptAt !== undefined ? [this.col.nextAttemptAt] : []),
      ...extra.map(([k]) => columns[k]!.name),
    ];
    const key = names.join(',');
    let stmt = this.finalizeStmts.get(key);
    if (!stmt) {
      stmt = this.sqlite.query(
        `UPDATE ${this.name} SET ${names.map((n) => `${n} = ?`).join(', ')}, ${this.col.leaseUntil} = 0, ${this.col.leaseToken} = NULL
          WHERE ${this.col.id} = ? AND ${this.col.leaseToken} = ?`,
      );
      this.finalizeStmts.set(key, stmt);
    }
    const values: SQLQueryBindings[] = [
      f.state,
      ...(f.attempts !== undefined ? [f.attempts] : []),
      ...(f.nextAttemptAt !== undefined ? [f.nextAttemptAt] : []),
      ...extra.map(([, v]) => v),
      claim.id,
      claim.leaseToken,
    ];
    return stmt.run(...values).changes > 0;
  }

  /** Many claims ended at once, as `finish` one after the other. */
  finishAll(c: TxCtx, finishes: readonly (Claim & { finish: Finalize<T> })[]): void {
    for (const f of finishes) this.finish(c, f, f.finish);
  }

  /**
   * At start, the leases a stopped process held let go: what it held is due again at once. One process serves
   * a database file, so every lease on it is this process's own (PostgreSQL's queue lets go only of the rows
   * whose tokens carry `prefix`, the starting replica's). How many were let go.
   */
  release(_c: TxCtx, _prefix?: string): number {
    const c = this.col;
    return this.sqlite
      .query(`UPDATE ${this.name} SET ${c.leaseUntil} = 0, ${c.leaseToken} = NULL WHERE ${c.state} = 'pending' AND ${c.leaseUntil} > 0`)
      .run().changes;
  }

  /** Rows still to do (leased or not). */
  pendingCount(): number {
    return (this.sqlite.query(`SELECT COUNT(*) AS n FROM ${this.name} WHERE ${this.col.state} = 'pending'`).get() as { n: number }).n;
  }
}

/** The default strategy: the oldest due rows first, by next_attempt_at. */
export function oldestDueFirst<Row>(select: string): PickStrategy<Row> {
  return ({ db, want, now, due, lease }) =>
    lease(db.$client.query<Row, [number, number]>(`${select} WHERE ${due} ORDER BY next_attempt_at LIMIT ?2`).all(now, want));
}
