import { sql } from 'drizzle-orm';
import { lockFor, listOf, readerOf, writerOf, rows } from '../../platform/sql/pg';
import type { StoreCtx, TxCtx } from '../../platform/store';

// What the portal's replicas share on PostgreSQL (on SQLite one process keeps it in memory, shared-state.ts):
// sign-in counts (`sign_in_counts`) and the files held for confirmation (`held_files`). Every key is a keyed
// hash made by the caller: no email, address or session token is written here.

export interface SignInKeys {
  email: string;
  address: string;
  pair: string;
}

/**
 * One sign-in attempt, inside the caller's transaction: the attempts of the address are serialized (its
 * advisory lock, which the pair's attempts share too), the pair's and the address's counts in the window read,
 * and, unless either has reached `lockAfter`, all three counted (a count past its window starts again at 1).
 * The highest of the three counts after it is returned; null when locked.
 */
export async function countSignInAttempt(c: TxCtx, k: SignInKeys, now: number, windowMs: number, lockAfter: number): Promise<number | null> {
  await lockFor(c, 'sign-in-address', k.address);
  const tx = writerOf(c);
  const [held] = await rows<{ n: number }>(
    tx,
    sql`SELECT count(*)::int AS n FROM sign_in_counts
         WHERE key = ANY(${listOf([k.pair, k.address])}::text[]) AND ${now}::bigint - first <= ${windowMs}::bigint AND count >= ${lockAfter}::int`,
  );
  if (held!.n > 0) return null;
  // The three rows are taken in one order, the keys', whichever attempt takes them.
  const counted = await rows<{ count: number }>(
    tx,
    sql`INSERT INTO sign_in_counts AS s (key, count, first)
          SELECT unnest(${listOf([k.email, k.address, k.pair].sort())}::text[]), 1, ${now}::bigint
        ON CONFLICT (key) DO UPDATE SET
          count = CASE WHEN ${now}::bigint - s.first > ${windowMs}::bigint THEN 1 ELSE s.count + 1 END,
          first = CASE WHEN ${now}::bigint - s.first > ${windowMs}::bigint THEN ${now}::bigint ELSE s.first END
        RETURNING s.count::int AS count`,
  );
  return Math.max(...counted.map((r) => Number(r.count)));
}

/** A sign-in that succeeded: the pair's count deleted, the email's and the address's reservations given back. */
export async function releaseSignInAttempt(c: TxCtx, k: SignInKeys, now: number, windowMs: number): Promise<void> {
  const tx = writerOf(c);
  await tx.execute(sql`DELETE FROM sign_in_counts WHERE key = ${k.pair}`);
  await tx.execute(
    sql`UPDATE sign_in_counts SET count = count - 1
         WHERE key = ANY(${listOf([k.email, k.address])}::text[]) AND count > 0 AND ${now}::bigint - first <= ${windowMs}::bigint`,
  );
}

/** The counts of these keys within the window (0 for none), for a status read. */
export async function signInCounts(c: StoreCtx, keys: string[], now: number, windowMs: number): Promise<Map<string, number>> {
  const found = await rows<{ key: string; count: number }>(
    readerOf(c),
    sql`SELECT key, count::int AS count FROM sign_in_counts WHERE key = ANY(${listOf(keys)}::text[]) AND ${now}::bigint - first <= ${windowMs}::bigint`,
  );
  return new Map(found.map((r) => [r.key, Number(r.count)]));
}

/** Counts past their window deleted, then the oldest while more than `maxKeys` are left: the table stays bounded. */
export async function sweepSignInCounts(c: StoreCtx, now: number, windowMs: number, maxKeys: number): Promise<void> {
  const db = readerOf(c);
  await db.execute(sql`DELETE FROM sign_in_counts WHERE first < ${now - windowMs}::bigint`);
  await db.execute(
    sql`DELETE FROM sign_in_counts WHERE key IN (
          SELECT key FROM sign_in_counts ORDER BY first DESC, key OFFSET ${maxKeys}::int)`,
  );
}

export interface HeldFileRow {
  id: string;
  name: string;
  body: Uint8Array;
  at: number;
}

/**
 * Holds a file for a session (replacing the one it held), then keeps the newest `maxHeld` (the oldest go),
 * one hold at a time across replicas.
 */
export async function holdFile(c: TxCtx, key: string, file: HeldFileRow, maxHeld: number): Promise<void> {
  await lockFor(c, 'held-files');
  const tx = writerOf(c);
  await tx.execute(
    sql`INSERT INTO held_files (key, id, name, body, at) VALUES (${key}, ${file.id}, ${file.name}, ${Buffer.from(file.body)}::bytea, ${file.at}::bigint)
        ON CONFLICT (key) DO UPDATE SET id = excluded.id, name = excluded.name, body = excluded.body, at = excluded.at`,
  );
  await tx.execute(sql`DELETE FROM held_files WHERE key IN (SELECT key FROM held_files ORDER BY at DESC, key OFFSET ${maxHeld}::int)`);
}

/** The session's held file with this id, deleted as it is read (one statement: only one caller ever gets it); null when gone. */
export async function takeHeldFile(c: StoreCtx, key: string, id: string, notBefore: number): Promise<HeldFileRow | null> {
  const [r] = await rows<{ id: string; name: string; body: Uint8Array; at: number }>(
    readerOf(c),
    sql`DELETE FROM held_files WHERE key = ${key} AND id = ${id} AND at >= ${notBefore}::bigint RETURNING id, name, body, at::float8 AS at`,
  );
  return r ? { id: r.id, name: r.name, body: r.body, at: Number(r.at) } : null;
}

/** Files held since before `notBefore` deleted. */
export async function sweepHeldFiles(c: StoreCtx, notBefore: number): Promise<void> {
  await readerOf(c).execute(sql`DELETE FROM held_files WHERE at < ${notBefore}::bigint`);
}
