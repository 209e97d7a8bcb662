// engine: postgres
// The portal's users and sessions on PostgreSQL: an email names one user however many creations with it run at
// once (20 here), and a session is started, found, touched and ended as on SQLite.
import { afterAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { createLender } from '../../../src/modules/lenders/service';
import { endSession, IDLE_MS, sessionOf, startSession } from '../../../src/modules/portal/session';
import { createUser, disableUser, listUsers, UserError, verifySignIn } from '../../../src/modules/portal/users';
import { FakeClock } from '../../../src/platform/clock';
import { openPg } from '../../../src/platform/pg';
import { rows } from '../../../src/platform/sql/pg';
import { freshPgDatabase, onPostgres } from '../../helpers/pg';
import { pgStoreDeps } from '../../helpers/pg-store-deps';

const CALLERS = 20;
const NOW = Date.UTC(2026, 0, 5, 12);
const PASSWORD = 'correct horse battery';
/** Each creation and sign-in hashes a password (argon2id): room for 20 of them on a busy machine. */
const SLOW = 90_000;

if (!onPostgres) {
  test('portal users and sessions under concurrent callers: not applicable without DATABASE_URL=postgres://…', () => {});
} else {
  const database = freshPgDatabase();
  const pg = openPg(database.url, { max: CALLERS + 5 });
  const clock = new FakeClock(NOW);
  const deps = { ...pgStoreDeps(pg), clock };
  afterAll(async () => {
    await pg.close();
    database.drop();
  });

  describe('portal users and sessions on PostgreSQL', () => {
    test('20 creations with one email at once: one user, every other caller told the email is taken', async () => {
      const { lender } = await createLender(deps, 'Portal Lender', NOW);
      const results = await Promise.allSettled(
        Array.from({ length: CALLERS }, (_, i) => createUser(deps, { lenderId: lender.id, email: i % 2 ? 'Ann@Example.com' : ' ann@example.com', displayName: `Ann ${i}`, password: PASSWORD, now: NOW })),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) {
        expect(r.reason).toBeInstanceOf(UserError);
        expect((r.reason as Error).message).toBe('A user with the email ann@example.com already exists');
      }
      const [{ n }] = await rows<{ n: number }>(pg.db, sql`SELECT count(*)::int AS n FROM dashboard_users WHERE email = 'ann@example.com'`);
      expect(n).toBe(1);
      expect((await listUsers(deps, lender.id)).map((u) => u.email)).toEqual(['ann@example.com']);
    }, SLOW);

    test('a session: started, found with its user and lender, touched, ended; a disabled user has none', async () => {
      const { lender } = await createLender(deps, 'Session Lender', NOW);
      const user = await createUser(deps, { lenderId: lender.id, email: 'bo@example.com', displayName: 'Bo', password: PASSWORD, now: NOW });
      expect((await verifySignIn(deps, 'BO@example.com', PASSWORD))?.id).toBe(user.id);
      expect(await verifySignIn(deps, 'bo@example.com', 'not the password')).toBeNull();

      const { token, csrf } = await startSession(deps, user.id);
      const s = await sessionOf(deps, token);
      expect(s).toMatchObject({ user: { id: user.id, email: 'bo@example.com' }, lender: { id: lender.id, name: 'Session Lender', debitCardApproved: false }, csrf });

      // A sign-in with the old cookie ends that session in the same step.
      const second = await startSession(deps, user.id, token);
      expect(await sessionOf(deps, token)).toBeNull();
      expect(await sessionOf(deps, second.token)).not.toBeNull();

      clock.advance(IDLE_MS + 1);
      expect(await sessionOf(deps, second.token)).toBeNull();
      clock.set(NOW);

      const third = await startSession(deps, user.id);
      await endSession(deps, (await sessionOf(deps, third.token))!.tokenHash);
      expect(await sessionOf(deps, third.token)).toBeNull();

      const fourth = await startSession(deps, user.id);
      expect(await disableUser(deps, 'bo@example.com', NOW)).toBe(true);
      expect(await sessionOf(deps, fourth.token)).toBeNull();
      expect(await verifySignIn(deps, 'bo@example.com', PASSWORD)).toBeNull();
    }, SLOW);
  });
}
