// A linked account's health as episodes. When a provider says a link needs the borrower (sign in again,
// revoked, closed at the bank, an account number that cannot be debited) an episode opens: the lender's
// endpoints are told once (BANK_LINK_RELINK_REQUIRED), the link is no longer read but probed with the
// provider's free call on BANK_LINK_PROBE_INTERVAL_MS (doubling up to a day), and no debit follows. When the
// provider says the same link (same token, same account) is healthy again, the episode closes: one
// BANK_LINK_REPAIRED goes out, a borrower blocked by it is unblocked and read at once, and reads (so
// collection) go on by themselves. A consent about to end is a warning episode (BANK_LINK_EXPIRING with the
// provider's date): the link is still read.

import type { LinkHealth } from '../../../db/schema/enums';
import type { Deps, JobContext } from '../../deps';
import type { Job } from '../../platform/jobs';
import { iso, isoOrNull } from '../../platform/clock';
import { transaction } from '../../platform/context';
import type { StoreCtx, TxCtx } from '../../platform/store';
import { BLOCKING_HEALTHS, type BankLink, type LinkProbe } from '../../adapters/bank-data/linked';
import { TransientProviderError } from '../../adapters/bank-data/types';
import { connectionFor } from '../bank-data-connections/service';
import { pushToEndpoints } from '../webhooks/endpoints';
import { type LinkHealthRow } from './link-health-store';
import { linkDigest, linkView } from './link-digest';
import { linkReadKey, linkReadsOf } from './link-reads';

/** Longest wait between two probes of an open episode. */
export const MAX_PROBE_INTERVAL_MS = 86_400_000;
/** A probe taken by a replica holds its link this long: another replica takes it only past this. */
const PROBE_LEASE_MS = 5 * 60_000;
/** Probes per run of the job. */
const PROBES_PER_RUN = 50;


/** What a provider said of a link, to be recorded with the read or probe that found it. */
export interface LinkHealthNote {
  lenderId: string;
  aid: string;
  link: BankLink;
  probe: LinkProbe;
  /** The balance batch whose read found it (null for a probe). */
  batchId: string | null;
}

/** The link's health row, when its provider ever said it was not ok. */
export function healthOfLink(c: StoreCtx, lenderId: string, link: BankLink): Promise<LinkHealthRow | undefined> {
  return c.deps.stores.linkHealth.healthOf(c, lenderId, linkDigest(lenderId, link));
}

/**
 * The health rows of several links of a lender, in the order of the links (undefined for a link its provider never
 * said was unwell), read in one statement for all of them (a page of borrowers).
 */
export async function healthOfLinks(c: StoreCtx, lenderId: string, links: readonly BankLink[]): Promise<(LinkHealthRow | undefined)[]> {
  const digests = links.map((link) => linkDigest(lenderId, link));
  const rows = new Map((await c.deps.stores.linkHealth.healthsAmong(c, lenderId, [...new Set(digests)])).map((r) => [r.digest, r]));
  return digests.map((d) => rows.get(d));
}

/**
 * Records what the provider said of a link, in the caller's transaction: opens an episode (and tells the
 * lender once), moves an open one to another health, closes one the provider says is well again, or attaches
 * the link to an episode recorded before links were kept for probing.
 */
export async function noteLinkHealth(ctx: JobContext & TxCtx, n: LinkHealthNote, now: number): Promise<void> {
  const { deps } = ctx;
  const digest = linkDigest(n.lenderId, n.link);
  const row = await ctx.deps.stores.linkHealth.healthOf(ctx, n.lenderId, digest);
  const was: LinkHealth = row?.health ?? 'ok';
  const { health, expiresAt } = n.probe;
  if (health === 'ok') {
    if (row && was !== 'ok') await closeEpisode(ctx, row, now);
    return;
  }
  const base = deps.config.bankLinkProbeIntervalMs;
  const sealed = row?.linkSealed ?? deps.vault.sealJson(n.link);
  if (was === health) {
    // The same episode: only what it lacked (the link for probing, the provider's date) is written.
    if (row && (row.linkSealed === null || row.expiresAt !== expiresAt)) {
      await ctx.deps.stores.linkHealth.put(ctx, { ...row, expiresAt, linkSealed: sealed, nextProbeAt: row.nextProbeAt ?? now, probeIntervalMs: row.probeIntervalMs ?? base });
    }
    return;
  }
  await ctx.deps.stores.linkHealth.put(ctx, {
    lenderId: n.lenderId,
    digest,
    provider: n.link.provider,
    aid: n.aid,
    health,
    since: now,
    expiresAt,
    nextProbeAt: now + base,
    probeIntervalMs: base,
    linkSealed: sealed,
  });
  // Told once per episode: when it opens, and when a warning becomes one the borrower must act on.
  const opens = was === 'ok' || (was === 'expiring' && BLOCKING_HEALTHS.has(health));
  if (!opens) return;
  if (health === 'expiring') {
    await pushToEndpoints(ctx, now, n.lenderId, 'BANK_LINK_EXPIRING', { authorizer_unique_id: n.aid, bank_link: linkView(n.link), expires_at: isoOrNull(expiresAt) });
    return;
  }
  await pushToEndpoints(ctx, now, n.lenderId, 'BANK_LINK_RELINK_REQUIRED', {
    authorizer_unique_id: n.aid,
    bank_link: linkView(n.link),
    health,
    since: iso(now),
    batch_id: n.batchId,
  });
}

/** The episode closes: the link is ok since now, a borrower it blocked is unblocked and read at once. */
async function closeEpisode(ctx: JobContext & TxCtx, row: LinkHealthRow, now: number): Promise<void> {
  const { deps } = ctx;
  await ctx.deps.stores.linkHealth.put(ctx, { ...row, health: 'ok', since: now, expiresAt: null, nextProbeAt: null, probeIntervalMs: null });
  if (!BLOCKING_HEALTHS.has(row.health)) return;
  const link = row.linkSealed ? deps.vault.openJson<BankLink>(row.linkSealed) : null;
  // The failure this replica remembers for the account is not taken again: the next read asks the provider.
  const conn = link ? await connectionFor(deps, row.lenderId, link.provider) : null;
  if (link && conn) linkReadsOf(deps).forget(linkReadKey(deps.vault, row.lenderId, conn.id, link));
  await pushToEndpoints(ctx, now, row.lenderId, 'BANK_LINK_REPAIRED', {
    authorizer_unique_id: row.aid,
    bank_link: link ? linkView(link) : null,
    was: row.health,
    since: iso(now),
  });
  // A block the link set lifts and the borrower is read at once (through the chain: enrollments sit above).
  await deps.balanceResults.afterLinkRepaired(ctx, { lenderId: row.lenderId, aid: row.aid, now });
}

/** One probe of an open episode, taken by this replica: its answer recorded, or the next probe put off. */
async function probeOne(deps: Deps, row: LinkHealthRow): Promise<'probed' | 'skipped'> {
  const now = deps.clock.now();
  const claimed = await transaction({ deps }, (tx) => tx.deps.stores.linkHealth.claimProbe(tx, row.lenderId, row.digest, row.nextProbeAt!, now + PROBE_LEASE_MS));
  if (!claimed) return 'skipped';
  const backOff = () =>
    transaction({ deps }, async (tx) => {
      const interval = Math.min((row.probeIntervalMs ?? deps.config.bankLinkProbeIntervalMs) * 2, MAX_PROBE_INTERVAL_MS);
      await tx.deps.stores.linkHealth.put(tx, { ...row, nextProbeAt: deps.clock.now() + interval, probeIntervalMs: interval });
    });
  const link = row.linkSealed ? deps.vault.openJson<BankLink>(row.linkSealed) : null;
  const conn = link ? await connectionFor(deps, row.lenderId, link.provider) : null;
  if (!link || !conn) {
    await backOff();
    return 'probed';
  }
  let probe: LinkProbe;
  try {
    if (link.provider === 'plaid' && conn.creds.provider === 'plaid') probe = await deps.linked.plaid.probe(conn.creds, link, now);
    else if (link.provider === 'stripe' && conn.creds.provider === 'stripe') probe = await deps.linked.stripe.probe(conn.creds, link, now);
    else throw new TransientProviderError('a probe with another provider’s credentials');
  } catch (e) {
    if (!(e instanceof TransientProviderError)) deps.logger.error({ provider: link.provider, err: e instanceof Error ? e.name : 'error' }, 'link probe failed');
    await backOff();
    return 'probed';
  }
  deps.metrics.linkProbes.inc({ provider: link.provider, health: probe.health });
  await transaction({ deps }, async (ctx) => {
    if (probe.health === row.health) {
      const interval = Math.min((row.probeIntervalMs ?? deps.config.bankLinkProbeIntervalMs) * 2, MAX_PROBE_INTERVAL_MS);
      await ctx.deps.stores.linkHealth.put(ctx, { ...row, expiresAt: probe.expiresAt ?? row.expiresAt, nextProbeAt: deps.clock.now() + interval, probeIntervalMs: interval });
      return;
    }
    await noteLinkHealth(ctx, { lenderId: row.lenderId, aid: row.aid, link, probe, batchId: null }, deps.clock.now());
  });
  return 'probed';
}

/** The job: open episodes due for a probe, each probed once (replicas share them by their claims). */
export async function probeLinks(deps: Deps): Promise<{ probed: number }> {
  const due = await deps.stores.linkHealth.dueProbes({ deps }, deps.clock.now(), PROBES_PER_RUN);
  let probed = 0;
  for (const row of due) if ((await probeOne(deps, row)) === 'probed') probed++;
  return { probed };
}

/**
 * In the enrollment's transaction: these borrowers hold these links (for the providers' webhooks to find them),
 * and the lender's open episodes of the links are probed at the next run of the job (a re-sent link).
 */
export async function linksEnrolled(ctx: TxCtx, lenderId: string, held: readonly { aid: string; link: BankLink }[], now: number): Promise<void> {
  if (held.length === 0) return;
  const rows = held.map((h) => ({ lenderId, digest: linkDigest(lenderId, h.link), aid: h.aid, provider: h.link.provider }));
  await ctx.deps.stores.linkHealth.putOwners(ctx, rows);
  await ctx.deps.stores.linkHealth.probeNow(ctx, lenderId, [...new Set(rows.map((r) => r.digest))], now);
}

/** The Plaid Item a link belongs to, as its read said (how a Plaid webhook about the Item finds the link). */
export function noteLinkItem(ctx: TxCtx, lenderId: string, link: BankLink, itemId: string): Promise<void> {
  return ctx.deps.stores.linkHealth.noteItem(ctx, lenderId, linkDigest(lenderId, link), itemId);
}

/** The borrowers of the lender holding a link. */
export function ownersOfLink(c: StoreCtx, lenderId: string, link: BankLink): Promise<string[]> {
  return c.deps.stores.linkHealth.ownersOfLink(c, lenderId, linkDigest(lenderId, link));
}

/** The links of a Plaid Item, every lender's, with the borrowers holding them. */
export function ownersOfItem(c: StoreCtx, itemId: string) {
  return c.deps.stores.linkHealth.ownersOfItem(c, itemId);
}

/** A borrower no longer holds a link (sent another since). */
export function dropOwner(c: TxCtx, lenderId: string, digest: string, aid: string): Promise<void> {
  return c.deps.stores.linkHealth.dropOwner(c, lenderId, digest, aid);
}

/** How long a provider webhook's receipt is kept (its signature is good for five minutes). */
const RECEIPT_KEPT_MS = 86_400_000;
/** A provider webhook recorded as acted on; false when it already was (a replay: nothing is done). */
export function firstReceipt(c: TxCtx, provider: BankLink['provider'], key: string, now: number): Promise<boolean> {
  return c.deps.stores.linkHealth.receipt(c, provider, key, now, now - RECEIPT_KEPT_MS);
}

/**
 * A probe of one link now, asked for by its lender: what the provider says is recorded as a probe's answer
 * (closing, moving or opening an episode), and the health is answered.
 */
export async function probeLinkNow(deps: Deps, lenderId: string, aid: string, link: BankLink): Promise<LinkHealthView> {
  const conn = await connectionFor(deps, lenderId, link.provider);
  if (!conn) return viewOf(await healthOfLink({ deps }, lenderId, link));
  let probe: LinkProbe;
  const now = deps.clock.now();
  if (link.provider === 'plaid' && conn.creds.provider === 'plaid') probe = await deps.linked.plaid.probe(conn.creds, link, now);
  else if (link.provider === 'stripe' && conn.creds.provider === 'stripe') probe = await deps.linked.stripe.probe(conn.creds, link, now);
  else throw new TransientProviderError('a probe with another provider’s credentials');
  deps.metrics.linkProbes.inc({ provider: link.provider, health: probe.health });
  await transaction({ deps }, (tx) => noteLinkHealth(tx, { lenderId, aid, link, probe, batchId: null }, deps.clock.now()));
  return viewOf(await healthOfLink({ deps }, lenderId, link));
}

/** What the enrollment shows of its link's health. */
export interface LinkHealthView {
  status: LinkHealth;
  since: string | null;
  expires_at: string | null;
}

export function viewOf(row: LinkHealthRow | undefined): LinkHealthView {
  if (!row) return { status: 'ok', since: null, expires_at: null };
  return { status: row.health, since: iso(row.since), expires_at: isoOrNull(row.expiresAt) };
}

/** Every health row of a borrower, gone with the borrower (erasure). */
export function eraseLinkHealth(ctx: TxCtx, lenderId: string, aid: string): Promise<void> {
  return ctx.deps.stores.linkHealth.eraseBorrower(ctx, lenderId, aid);
}

/** The job: links with an open episode probed on their schedule. */
export const linkProbeJob: Job<Deps> = {
  name: 'link-probes',
  intervalMs: 10_000,
  tick: async (deps) => {
    await probeLinks(deps);
  },
};
