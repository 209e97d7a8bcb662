import { expect, test } from 'bun:test';
import { contract } from './contract';
import { PORTAL_PASSWORD, signedIn } from '../helpers/portal';
import { createUser, disableUser, listUsers, resetPassword, verifySignIn, type DashboardUser } from '../../src/modules/portal/users';
import { IDLE_MS } from '../../src/modules/portal/session';
import { newId } from '../../src/platform/ids';

/** What the session cookie's token is stored as. */
const tokenHash = (cookie: string) => new Bun.CryptoHasher('sha256').update(cookie.slice(cookie.indexOf('=') + 1)).digest('hex');

contract('portal', (t) => {
  const { ctx, store, storeCtx } = t;
  const user = (lenderId: string, email: string, name = 'Olive Ops') =>
    createUser(ctx.rt, { lenderId, email, displayName: name, password: PORTAL_PASSWORD, now: ctx.clock.now() });

  test('a new user is stored whole, found by its normalized email, with numbers as numbers and no disabled time', async () => {
    expect(await store.emailTaken(storeCtx, 'ann@example.test')).toBe(false);
    expect(await store.userByEmail(storeCtx, 'ann@example.test')).toBeUndefined();
    expect(await store.activeUserByEmail(storeCtx, 'ann@example.test')).toBeUndefined();

    const made = await user(ctx.lender.id, '  Ann@Example.TEST ', 'Ann');
    expect(made.email).toBe('ann@example.test');
    expect(await store.emailTaken(storeCtx, 'ann@example.test')).toBe(true);
    const found = await store.userByEmail(storeCtx, 'ann@example.test');
    expect(found).toEqual(made);
    expect(typeof found!.createdAt).toBe('number');
    expect(found!.createdAt).toBe(ctx.clock.now());
    expect(found!.disabledAt).toBeNull();
    expect(await store.activeUserByEmail(storeCtx, 'ann@example.test')).toEqual(made);
    // The look-up is of the stored form: another case is another email to the store.
    expect(await store.emailTaken(storeCtx, 'Ann@Example.test')).toBe(false);
  });

  test('one email is one user: a second creation is refused, and a direct second insert fails on both engines', async () => {
    const first = await user(ctx.lender.id, 'dup@example.test');
    await expect(user(ctx.newLender().id, 'DUP@example.test')).rejects.toThrow('already exists');
    const twin: DashboardUser = { ...first, id: newId(), displayName: 'Twin' };
    await expect(
      t.inTx(async (tx) => {
        await store.serializeUserCreation(tx, twin.email);
        await store.insertUser(tx, twin);
      }),
    ).rejects.toThrow();
    expect(await store.userByEmail(storeCtx, 'dup@example.test')).toEqual(first);
  });

  test('a user inserted in a transaction that rolls back is not there', async () => {
    const lender = ctx.newLender();
    const ghost: DashboardUser = {
      id: newId(),
      lenderId: lender.id,
      email: 'ghost@example.test',
      displayName: 'Ghost',
      passwordHash: 'not a hash',
      createdAt: ctx.clock.now(),
      disabledAt: null,
    };
    await expect(
      t.inTx(async (tx) => {
        await store.serializeUserCreation(tx, ghost.email);
        await store.insertUser(tx, ghost);
        // Seen inside its own transaction, gone once it rolls back.
        expect(await store.emailTaken(tx, ghost.email)).toBe(true);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await store.emailTaken(storeCtx, ghost.email)).toBe(false);
    expect(await store.listUsers(storeCtx, lender.id)).toEqual([]);
  });

  test("a lender's users oldest first, those made in one millisecond in the order they were made, no other lender's", async () => {
    const lender = ctx.newLender();
    const other = ctx.newLender();
    const late = await user(lender.id, 'late@example.test');
    // Made earlier on the clock, stored later: the order is by creation time, not by insertion.
    const early: DashboardUser = { ...late, id: newId(), email: 'early@example.test', createdAt: late.createdAt - 60_000 };
    await t.inTx((tx) => store.insertUser(tx, early));
    ctx.clock.advance(1_000);
    const sameMs = [];
    for (const name of ['b', 'a', 'c']) sameMs.push(await user(lender.id, `${name}-same@example.test`));
    await user(other.id, 'elsewhere@example.test');
    const listed = await store.listUsers(storeCtx, lender.id);
    expect(listed.map((u) => u.email)).toEqual(['early@example.test', 'late@example.test', ...sameMs.map((u) => u.email)]);
    expect((await listUsers(ctx.rt, other.id)).map((u) => u.email)).toEqual(['elsewhere@example.test']);
  });

  test('a session from signing in reads back with its user and lender; touching it moves only its last use', async () => {
    const client = await signedIn(ctx, { email: 'sess@example.test', name: 'Sess' });
    const hash = tokenHash(client.cookie);
    const rec = await store.sessionByToken(storeCtx, hash);
    expect(rec).toBeDefined();
    expect(rec!.s).toMatchObject({ tokenHash: hash, createdAt: ctx.clock.now(), lastSeenAt: ctx.clock.now() });
    expect(typeof rec!.s.csrfToken).toBe('string');
    expect(rec!.u).toEqual((await store.userByEmail(storeCtx, 'sess@example.test'))!);
    expect(rec!.l).toMatchObject({ id: ctx.lender.id, debitCardApproved: false });
    expect(typeof rec!.l.createdAt).toBe('number');
    expect(await store.sessionByToken(storeCtx, tokenHash('drs_portal=unknown'))).toBeUndefined();

    ctx.clock.advance(IDLE_MS - 1_000);
    await t.inTx((tx) => store.touchSession(tx, hash, ctx.clock.now()));
    const touched = await store.sessionByToken(storeCtx, hash);
    expect(touched!.s).toEqual({ ...rec!.s, lastSeenAt: ctx.clock.now() });
    // Touched, it outlives the idle time counted from the sign-in.
    ctx.clock.advance(2_000);
    expect((await client.get('/portal')).status).toBe(200);
    // A touch of an unknown session writes nothing.
    await t.inTx((tx) => store.touchSession(tx, tokenHash('drs_portal=unknown'), ctx.clock.now()));
    expect(await store.sessionByToken(storeCtx, tokenHash('drs_portal=unknown'))).toBeUndefined();
  });

  test('signing out ends that session only; a session inserted in a rolled-back transaction is not there', async () => {
    const email = 'two@example.test';
    const first = await signedIn(ctx, { email });
    const second = await store.userByEmail(storeCtx, email).then((u) => u!);
    const other = { tokenHash: tokenHash('drs_portal=other-browser'), userId: second.id, csrfToken: 'c', createdAt: ctx.clock.now(), lastSeenAt: ctx.clock.now() };
    await t.inTx((tx) => store.insertSession(tx, other));
    expect((await store.sessionByToken(storeCtx, other.tokenHash))!.s).toEqual(other);

    const out = await first.post('/portal/logout', {});
    expect(out.status).toBe(303);
    expect(await store.sessionByToken(storeCtx, tokenHash(first.cookie))).toBeUndefined();
    expect((await store.sessionByToken(storeCtx, other.tokenHash))!.s).toEqual(other);

    const rolledBack = { ...other, tokenHash: tokenHash('drs_portal=never') };
    await expect(
      t.inTx(async (tx) => {
        await store.insertSession(tx, rolledBack);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await store.sessionByToken(storeCtx, rolledBack.tokenHash)).toBeUndefined();
    // Ending a session that is not there is no error.
    await t.inTx((tx) => store.deleteSession(tx, rolledBack.tokenHash));
  });

  test("disabling a user keeps its row, hides it from sign-in and ends its sessions, not another user's", async () => {
    const lender = ctx.newLender();
    const gone = await signedIn(ctx, { lenderId: lender.id, email: 'gone@example.test' });
    const stays = await signedIn(ctx, { lenderId: lender.id, email: 'stays@example.test' });
    const disabledAt = ctx.clock.now();
    expect(await disableUser(ctx.rt, 'Gone@example.test', disabledAt)).toBe(true);
    const row = await store.userByEmail(storeCtx, 'gone@example.test');
    expect(row!.disabledAt).toBe(disabledAt);
    expect(typeof row!.disabledAt).toBe('number');
    expect(await store.activeUserByEmail(storeCtx, 'gone@example.test')).toBeUndefined();
    expect(await store.emailTaken(storeCtx, 'gone@example.test')).toBe(true);
    expect(await verifySignIn(ctx.rt, 'gone@example.test', PORTAL_PASSWORD)).toBeNull();
    expect(await store.sessionByToken(storeCtx, tokenHash(gone.cookie))).toBeUndefined();
    expect(await store.sessionByToken(storeCtx, tokenHash(stays.cookie))).toBeDefined();
    // A disabled user is still listed, with its time.
    const listed = await store.listUsers(storeCtx, lender.id);
    expect(listed.map((u) => [u.email, u.disabledAt])).toEqual([
      ['gone@example.test', disabledAt],
      ['stays@example.test', null],
    ]);

    // Disabled again later: the first time stands (the service passes it back).
    ctx.clock.advance(60_000);
    expect(await disableUser(ctx.rt, 'gone@example.test', ctx.clock.now())).toBe(true);
    expect((await store.userByEmail(storeCtx, 'gone@example.test'))!.disabledAt).toBe(disabledAt);
  });

  test('a new password replaces the hash and ends every session of that user alone', async () => {
    const lender = ctx.newLender();
    const a1 = await signedIn(ctx, { lenderId: lender.id, email: 'reset@example.test' });
    const before = (await store.userByEmail(storeCtx, 'reset@example.test'))!;
    const a2 = { tokenHash: tokenHash('drs_portal=second-browser'), userId: before.id, csrfToken: 'x', createdAt: ctx.clock.now(), lastSeenAt: ctx.clock.now() };
    await t.inTx((tx) => store.insertSession(tx, a2));
    const bystander = await signedIn(ctx, { lenderId: lender.id, email: 'bystander@example.test' });

    expect(await resetPassword(ctx.rt, 'reset@example.test', 'a brand new passphrase')).toBe(true);
    const after = (await store.userByEmail(storeCtx, 'reset@example.test'))!;
    expect(after.passwordHash).not.toBe(before.passwordHash);
    expect(after).toEqual({ ...before, passwordHash: after.passwordHash });
    expect(await verifySignIn(ctx.rt, 'reset@example.test', 'a brand new passphrase')).toEqual(after);
    expect(await verifySignIn(ctx.rt, 'reset@example.test', PORTAL_PASSWORD)).toBeNull();
    expect(await store.sessionByToken(storeCtx, tokenHash(a1.cookie))).toBeUndefined();
    expect(await store.sessionByToken(storeCtx, a2.tokenHash)).toBeUndefined();
    expect(await store.sessionByToken(storeCtx, tokenHash(bystander.cookie))).toBeDefined();

    // Straight through the store: the hash is replaced, nothing else of the row.
    await t.inTx((tx) => store.setPasswordHash(tx, after.id, 'replaced'));
    expect(await store.userByEmail(storeCtx, 'reset@example.test')).toEqual({ ...after, passwordHash: 'replaced' });
    await t.inTx((tx) => store.deleteUserSessions(tx, after.id));
    expect(await store.sessionByToken(storeCtx, tokenHash(bystander.cookie))).toBeDefined();
  });
});
