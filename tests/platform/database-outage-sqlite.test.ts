// engine: sqlite (it tests SQLite's file lock held by another process)
// The database file locked by another process past the busy timeout (an operator's sqlite3 shell left in a
// write transaction, a backup tool): a request that must write is answered 503 SERVICE_UNAVAILABLE with
// Retry-After, never 500; reads go on from the write-ahead log; writes go through again once it is let go.
import { afterAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { createTestContext } from '../helpers/context';
import { bankAuthorizer } from '../helpers/fixtures';

const c = createTestContext();
afterAll(() => c.close());

describe('SQLite locked by another process', () => {
  test('a write is a 503 with Retry-After, a read is answered, and the write goes through once the lock is let go', async () => {
    const other = new Database(c.rt.config.databasePath);
    other.exec('BEGIN IMMEDIATE');
    try {
      const write = await c.request('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('locked-1')] } });
      expect(write.status).toBe(503);
      expect(Number(write.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await write.json()) as { error: { code: string } }).error.code).toBe('SERVICE_UNAVAILABLE');
      expect((await c.request('GET', '/v1/payment_connections')).status).toBe(200);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect((await c.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('locked-1')] } })).status).toBe(201);
  });
});
