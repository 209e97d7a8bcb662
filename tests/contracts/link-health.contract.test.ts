import { afterAll, expect, test } from 'bun:test';
import { contract } from './contract';
import { startFakePlaid } from '../fakes/plaid-server';
import { enrollBorrower } from '../helpers/fixtures';
import { queueDueReads } from '../../src/modules/enrollments/monitoring';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { probeLinks } from '../../src/modules/balance-requests/link-health';
import { linkDigest } from '../../src/modules/balance-requests/link-digest';
import type { LinkHealthRow } from '../../src/modules/balance-requests/link-health-store';

const READ = 3_600_000;
const PROBE = 60_000;
// Plaid stands outside: a read of a link it says needs the borrower opens an episode.
const plaid = startFakePlaid();
afterAll(() => plaid.stop());

let n = 0;
const digestOf = (tag: string) => new Bun.CryptoHasher('sha256').update(`${tag}-${++n}`).digest('hex');

contract(
  'linkHealth',
  (t) => {
    const { ctx, store, storeCtx } = t;

    /** An open episode of a link, as a read that found it unwell writes it. */
    const episode = (lenderId: string, over: Partial<LinkHealthRow> = {}): LinkHealthRow => ({
      lenderId,
      digest: digestOf('link'),
      provider: 'plaid',
      aid: 'borrower-1',
      health: 'relink_required',
      since: ctx.clock.now(),
      expiresAt: null,
      nextProbeAt: ctx.clock.now() + PROBE,
      probeIntervalMs: PROBE,
      linkSealed: ctx.rt.vault.sealJson({ provider: 'plaid', accessToken: 'access-contract', accountId: 'acc' }),
      ...over,
    });
    const put = (...rows: LinkHealthRow[]) =>
      t.inTx(async (tx) => {
        for (const row of rows) await store.put(tx, row);
      });

    test('a row is read back as written, typed; a link never said to be unwell has none', async () => {
      const lender = ctx.newLender();
      const open = episode(lender.id, { health: 'expiring', expiresAt: ctx.clock.now() + 86_400_000 });
      const old = episode(lender.id, { nextProbeAt: null, probeIntervalMs: null, linkSealed: null, health: 'revoked' });
      await put(open, old);
      expect(await store.healthOf(storeCtx, lender.id, open.digest)).toEqual(open);
      expect(await store.healthOf(storeCtx, lender.id, old.digest)).toEqual(old);
      const read = (await store.healthOf(storeCtx, lender.id, open.digest))!;
      for (const k of ['since', 'expiresAt', 'nextProbeAt', 'probeIntervalMs'] as const) expect(typeof read[k]).toBe('number');
      expect(await store.healthOf(storeCtx, lender.id, digestOf('never'))).toBeUndefined();
      // Another lender's link of the same digest is another row.
      expect(await store.healthOf(storeCtx, ctx.lender.id, open.digest)).toBeUndefined();
    });

    test('the rows among several links: those of the lender that have one, none for an empty list', async () => {
      const lender = ctx.newLender();
      const a = episode(lender.id);
      const b = episode(lender.id, { health: 'closed', provider: 'stripe' });
      const theirs = episode(ctx.lender.id);
      await put(a, b, theirs);
      const among = await store.healthsAmong(storeCtx, lender.id, [b.digest, digestOf('none'), a.digest, theirs.digest]);
      expect(among.sort((x, y) => x.digest.localeCompare(y.digest))).toEqual([a, b].sort((x, y) => x.digest.localeCompare(y.digest)));
      expect(await store.healthsAmong(storeCtx, lender.id, [])).toEqual([]);
      expect(await store.healthsAmong(storeCtx, lender.id, [a.digest, a.digest])).toEqual([a]);
    });

    test('put replaces the row whole, but a row written without its link keeps the sealed link it had', async () => {
      const lender = ctx.newLender();
      const first = episode(lender.id);
      await put(first);
      ctx.clock.advance(1_000);
      const closed: LinkHealthRow = { ...first, aid: 'borrower-2', health: 'ok', since: ctx.clock.now(), expiresAt: null, nextProbeAt: null, probeIntervalMs: null, linkSealed: null };
      await put(closed);
      expect(await store.healthOf(storeCtx, lender.id, first.digest)).toEqual({ ...closed, linkSealed: first.linkSealed });
      const again = { ...first, since: ctx.clock.now(), linkSealed: ctx.rt.vault.sealJson({ provider: 'plaid', accessToken: 'another', accountId: 'acc' }) };
      await put(again);
      expect(await store.healthOf(storeCtx, lender.id, first.digest)).toEqual(again);
    });

    test('a row written in a transaction that rolls back is not there', async () => {
      const lender = ctx.newLender();
      const row = episode(lender.id);
      await expect(
        t.inTx(async (tx) => {
          await store.put(tx, row);
          expect(await store.healthOf(tx, lender.id, row.digest)).toEqual(row);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await store.healthOf(storeCtx, lender.id, row.digest)).toBeUndefined();
    });

    test('due probes: open episodes due at now, oldest first, at most the limit; a claim takes one once', async () => {
      const lender = ctx.newLender();
      // Long past, so that no other test's episode is due before them.
      const [late, early, middle] = [3_000, 1_000, 2_000].map((at) => episode(lender.id, { nextProbeAt: at }));
      const notDue = episode(lender.id, { nextProbeAt: 2_600 });
      const closed = episode(lender.id, { health: 'ok', nextProbeAt: null, probeIntervalMs: null });
      await put(late!, early!, middle!, notDue, closed);
      expect(await store.dueProbes(storeCtx, 2_500, 10)).toEqual([early, middle]);
      expect((await store.dueProbes(storeCtx, 3_000, 2)).map((r) => r.nextProbeAt)).toEqual([1_000, 2_000]);
      expect(await store.dueProbes(storeCtx, 999, 10)).toEqual([]);

      // Two claims of one due probe at once: one takes it, its next probe moved to the lease's end.
      const claims = await Promise.all([1, 2].map(() => t.inTx((tx) => store.claimProbe(tx, lender.id, early!.digest, 1_000, 90_000))));
      expect(claims.sort()).toEqual([false, true]);
      expect((await store.healthOf(storeCtx, lender.id, early!.digest))!.nextProbeAt).toBe(90_000);
      // A claim that read another time, or of a closed episode, takes nothing.
      expect(await t.inTx((tx) => store.claimProbe(tx, lender.id, middle!.digest, 1_999, 90_000))).toBe(false);
      expect(await t.inTx((tx) => store.claimProbe(tx, lender.id, closed.digest, 0, 90_000))).toBe(false);
      expect((await store.dueProbes(storeCtx, 2_500, 10)).map((r) => r.digest)).toEqual([middle!.digest]);
    });

    test('probeNow makes the lender\'s open episodes of these links due now, only those with their link kept', async () => {
      const lender = ctx.newLender();
      const open = episode(lender.id, { nextProbeAt: ctx.clock.now() + 3_600_000 });
      const noLink = episode(lender.id, { linkSealed: null, nextProbeAt: ctx.clock.now() + 3_600_000 });
      const healed = episode(lender.id, { health: 'ok', nextProbeAt: null, probeIntervalMs: null });
      const untouched = episode(lender.id, { nextProbeAt: ctx.clock.now() + 3_600_000 });
      const theirs = episode(ctx.lender.id, { nextProbeAt: ctx.clock.now() + 3_600_000 });
      await put(open, noLink, healed, untouched, theirs);
      const digests = [open.digest, noLink.digest, healed.digest, theirs.digest, digestOf('unknown')];
      expect(await t.inTx((tx) => store.probeNow(tx, lender.id, digests, ctx.clock.now()))).toBe(1);
      expect((await store.healthOf(storeCtx, lender.id, open.digest))!.nextProbeAt).toBe(ctx.clock.now());
      expect((await store.healthOf(storeCtx, lender.id, noLink.digest))!.nextProbeAt).toBe(noLink.nextProbeAt);
      expect((await store.healthOf(storeCtx, lender.id, healed.digest))!.nextProbeAt).toBeNull();
      expect((await store.healthOf(storeCtx, lender.id, untouched.digest))!.nextProbeAt).toBe(untouched.nextProbeAt);
      expect((await store.healthOf(storeCtx, ctx.lender.id, theirs.digest))!.nextProbeAt).toBe(theirs.nextProbeAt);
      expect(await t.inTx((tx) => store.probeNow(tx, lender.id, [], ctx.clock.now()))).toBe(0);
    });

    test('owners of a link: kept when already known, listed by borrower, dropped one by one', async () => {
      const lender = ctx.newLender();
      const link = digestOf('owned');
      await t.inTx(async (tx) => {
        await store.putOwners(tx, [
          { lenderId: lender.id, digest: link, aid: 'zed', provider: 'plaid' },
          { lenderId: lender.id, digest: link, aid: 'amy', provider: 'plaid' },
          { lenderId: ctx.lender.id, digest: link, aid: 'other', provider: 'plaid' },
        ]);
        await store.noteItem(tx, lender.id, link, 'item_owned');
      });
      // Known already: the row is kept as it was, its Item too; an empty list writes nothing.
      await t.inTx(async (tx) => {
        await store.putOwners(tx, [{ lenderId: lender.id, digest: link, aid: 'amy', provider: 'plaid' }]);
        await store.putOwners(tx, []);
      });
      expect(await store.ownersOfLink(storeCtx, lender.id, link)).toEqual(['amy', 'zed']);
      expect(await store.ownersOfLink(storeCtx, lender.id, digestOf('nobody'))).toEqual([]);
      expect(await store.ownersOfItem(storeCtx, 'item_owned')).toEqual([
        { lenderId: lender.id, digest: link, aid: 'amy' },
        { lenderId: lender.id, digest: link, aid: 'zed' },
      ]);
      await t.inTx((tx) => store.dropOwner(tx, lender.id, link, 'zed'));
      expect(await store.ownersOfLink(storeCtx, lender.id, link)).toEqual(['amy']);
      // The same link of another lender is theirs.
      expect(await store.ownersOfLink(storeCtx, ctx.lender.id, link)).toEqual(['other']);
    });

    test('the links of a Plaid Item, every lender\'s, by lender then borrower; noting another Item moves the link', async () => {
      const [a, b] = [ctx.newLender(), ctx.newLender()].sort((x, y) => (x.id < y.id ? -1 : 1));
      const la = digestOf('item-a');
      const lb = digestOf('item-b');
      await t.inTx(async (tx) => {
        await store.putOwners(tx, [
          { lenderId: b!.id, digest: lb, aid: 'b-1', provider: 'plaid' },
          { lenderId: a!.id, digest: la, aid: 'a-2', provider: 'plaid' },
          { lenderId: a!.id, digest: la, aid: 'a-1', provider: 'plaid' },
        ]);
        await store.noteItem(tx, b!.id, lb, 'item_shared');
        await store.noteItem(tx, a!.id, la, 'item_shared');
      });
      expect(await store.ownersOfItem(storeCtx, 'item_shared')).toEqual([
        { lenderId: a!.id, digest: la, aid: 'a-1' },
        { lenderId: a!.id, digest: la, aid: 'a-2' },
        { lenderId: b!.id, digest: lb, aid: 'b-1' },
      ]);
      await t.inTx((tx) => store.noteItem(tx, b!.id, lb, 'item_moved'));
      expect((await store.ownersOfItem(storeCtx, 'item_shared')).map((o) => o.aid)).toEqual(['a-1', 'a-2']);
      expect(await store.ownersOfItem(storeCtx, 'item_moved')).toEqual([{ lenderId: b!.id, digest: lb, aid: 'b-1' }]);
      expect(await store.ownersOfItem(storeCtx, 'item_never')).toEqual([]);
    });

    test('erasing a borrower takes its health rows and its owner rows, and no one else\'s', async () => {
      const lender = ctx.newLender();
      const gone = episode(lender.id, { aid: 'erased' });
      const stays = episode(lender.id, { aid: 'kept' });
      const sameAid = episode(ctx.lender.id, { aid: 'erased' });
      await put(gone, stays, sameAid);
      await t.inTx((tx) =>
        store.putOwners(tx, [
          { lenderId: lender.id, digest: gone.digest, aid: 'erased', provider: 'plaid' },
          { lenderId: lender.id, digest: gone.digest, aid: 'kept', provider: 'plaid' },
          { lenderId: ctx.lender.id, digest: sameAid.digest, aid: 'erased', provider: 'plaid' },
        ]),
      );
      await t.inTx((tx) => store.eraseBorrower(tx, lender.id, 'erased'));
      expect(await store.healthOf(storeCtx, lender.id, gone.digest)).toBeUndefined();
      expect(await store.healthOf(storeCtx, lender.id, stays.digest)).toEqual(stays);
      expect(await store.ownersOfLink(storeCtx, lender.id, gone.digest)).toEqual(['kept']);
      expect(await store.healthOf(storeCtx, ctx.lender.id, sameAid.digest)).toEqual(sameAid);
      expect(await store.ownersOfLink(storeCtx, ctx.lender.id, sameAid.digest)).toEqual(['erased']);
    });

    test('a webhook receipt is taken once; a receipt older than the cut-off goes, and its key can be taken again', async () => {
      const key = digestOf('receipt');
      const now = ctx.clock.now();
      expect(await t.inTx((tx) => store.receipt(tx, 'plaid', key, now, now - 86_400_000))).toBe(true);
      expect(await t.inTx((tx) => store.receipt(tx, 'plaid', key, now + 1, now - 86_400_000))).toBe(false);
      // Another provider's receipt of the same key is another receipt.
      expect(await t.inTx((tx) => store.receipt(tx, 'stripe', key, now, now - 86_400_000))).toBe(true);
      // A receipt taken in a transaction that rolls back was not taken.
      const lost = digestOf('receipt');
      await expect(
        t.inTx(async (tx) => {
          expect(await store.receipt(tx, 'plaid', lost, now, now - 86_400_000)).toBe(true);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(await t.inTx((tx) => store.receipt(tx, 'plaid', lost, now, now - 86_400_000))).toBe(true);
      // A day on, the first is past the cut-off (received before it): gone, so its key is new again.
      const later = now + 86_400_000 + 1;
      expect(await t.inTx((tx) => store.receipt(tx, 'plaid', key, later, later - 86_400_000))).toBe(true);
      // One received exactly at the cut-off stays.
      const edge = digestOf('receipt');
      expect(await t.inTx((tx) => store.receipt(tx, 'stripe', edge, later, later - 86_400_000))).toBe(true);
      expect(await t.inTx((tx) => store.receipt(tx, 'stripe', edge, later + 86_400_000, later))).toBe(false);
    });

    test('through the service: a read opens an episode, a probe is taken and put off, a re-sent link is due at once and healed, erasure ends it', async () => {
      plaid.addClient('client_contract', 'secret-contract');
      const lender = ctx.newLender();
      const created = await ctx.json('POST', '/v1/bank_data_connections', {
        key: lender.key,
        body: { provider: 'plaid', client_id: 'client_contract', secret: 'secret-contract', environment: 'production' },
      });
      expect(created.status).toBe(201);
      const token = `access-production-contract-${t.engine}`;
      const bankLink = { provider: 'plaid', access_token: token, account_id: 'acc_contract_0001' };
      plaid.addItem(token, [{ account_id: 'acc_contract_0001', available: 900, current: 900 }]);
      plaid.setItemError(token, 'ITEM_LOGIN_REQUIRED');
      const enroll = async () => {
        const r = await ctx.json('POST', '/v1/payment_enrollments', { key: lender.key, body: { borrowers: [enrollBorrower('linked', { bank_link: bankLink })] } });
        expect(r.status).toBe(207);
        expect(r.body.results[0].error ?? null).toBeNull();
      };
      await enroll();
      const digest = linkDigest(lender.id, { provider: 'plaid', accessToken: token, accountId: 'acc_contract_0001' });
      expect(await store.ownersOfLink(storeCtx, lender.id, digest)).toEqual(['linked']);

      ctx.clock.advance(READ);
      await queueDueReads(ctx.rt);
      await processBalances(ctx.rt);
      const opened = (await store.healthOf(storeCtx, lender.id, digest))!;
      expect(opened).toMatchObject({ aid: 'linked', provider: 'plaid', health: 'relink_required', since: ctx.clock.now(), nextProbeAt: ctx.clock.now() + PROBE });
      const shown = await ctx.json('GET', '/v1/payment_enrollments/linked', { key: lender.key });
      expect(shown.body.bank_link.health.status).toBe('relink_required');

      // Due: probed once, still unwell, the next probe put off twice as long.
      ctx.clock.advance(PROBE);
      const probed = await probeLinks(ctx.rt);
      expect(probed.probed).toBeGreaterThanOrEqual(1);
      const after = (await store.healthOf(storeCtx, lender.id, digest))!;
      expect(after).toMatchObject({ health: 'relink_required', since: opened.since, probeIntervalMs: 2 * PROBE, nextProbeAt: ctx.clock.now() + 2 * PROBE });

      // The lender sends the link again: due now.
      await enroll();
      expect((await store.healthOf(storeCtx, lender.id, digest))!.nextProbeAt).toBe(ctx.clock.now());

      // Repaired at Plaid: the probe closes the episode, and the read that follows notes the link's Item.
      plaid.setItemError(token, null);
      await probeLinks(ctx.rt);
      expect(await store.healthOf(storeCtx, lender.id, digest)).toMatchObject({ health: 'ok', since: ctx.clock.now(), nextProbeAt: null, probeIntervalMs: null });
      await queueDueReads(ctx.rt);
      await processBalances(ctx.rt);
      expect(await store.ownersOfItem(storeCtx, `item_${token.slice(-8)}`)).toEqual([{ lenderId: lender.id, digest, aid: 'linked' }]);

      expect((await ctx.json('DELETE', '/v1/persisted_authorizers', { key: lender.key, body: { authorizer_unique_ids: ['linked'] } })).status).toBe(200);
      expect(await store.healthOf(storeCtx, lender.id, digest)).toBeUndefined();
      expect(await store.ownersOfLink(storeCtx, lender.id, digest)).toEqual([]);
    });
  },
  { env: { PLAID_API_URL: plaid.url, MONITOR_READ_INTERVAL_MS: String(READ), BANK_LINK_PROBE_INTERVAL_MS: String(PROBE) } },
);
