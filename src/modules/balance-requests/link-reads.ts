import type { BankLink, LinkedReadResult } from '../../adapters/bank-data/linked';
import type { Vault } from '../../platform/vault';

// A bound per linked account. Every call to Plaid or Stripe Financial Connections is billed to the lender, and
// any number of authorizers (in one request or several, in schedule runs, in monitoring reads) may carry the
// same linked account: the pipeline asks the provider about one account at most once per
// BANK_LINK_MIN_READ_INTERVAL_MS. Reads of one account at once share one call; a read within the window of
// the account's last answer takes that answer (the same balance or failure code, balance kind and provider
// time) and is recorded as a reuse of it, naming the read it reuses (reused_from in the results).
//
// What is reused is the provider's answer about the account: a balance, or a failure it gave (a closed account,
// a relink needed, refused credentials), which stays a failure with its cause; a failed read is never shown as
// a success. A refresh still running at the provider is remembered until the provider's time to look again,
// so the items waiting on it do not each ask. What is not an answer is not remembered: an outage or a rate
// limit is retried with backoff as before (the reads at once still share their call), and an internal error is
// the item's alone.
//
// One account is the lender, the lender's connection, the provider and the account (Plaid: the Item's access
// token and the account_id; Stripe: the fca_ account), named by a keyed hash: neither the token nor the account
// is kept in the clear. Two lenders never share an answer, nor do two connections of one lender.
//
// The memory is this process's: no table holds a link's identity, so the database cannot say "this account's
// last answer". It is bounded (LINK_READS_MAX accounts, the oldest read first out) and starts empty at a
// start. With several replicas on PostgreSQL each replica asks about one account at most once per window, so
// the calls of one account stay bounded by the number of replicas, whatever the number of authorizers or
// requests carrying it.

/** Accounts remembered per process at most: about 45 MB when full (70 MB with the longest authorizer ids). */
export const LINK_READS_MAX = 100_000;

/** The read an answer came from: its batch, its authorizer and when it was answered (epoch ms). */
export interface ReusedFrom {
  batchId: string;
  aid: string;
  at: number;
}

/** An answer of the provider about an account. */
export type LinkAnswer = Extract<LinkedReadResult, { kind: 'balance' | 'failed' }>;

/** What one item's read of a linked account came to. */
export type ItemRead =
  /** The provider was asked for this item (`from` is this item's read), or its answer to another read was taken. */
  | { kind: 'fresh' | 'reused'; answer: LinkAnswer; from: ReusedFrom }
  /** A refresh is still running at the provider: look again at `retryAt`. */
  | { kind: 'pending'; retryAt: number }
  /** The read waited so long for its turn that its claim may have lapsed: not read, given back to the queue. */
  | { kind: 'given_back' };

type Entry = { kind: 'answer'; answer: LinkAnswer; from: ReusedFrom } | { kind: 'pending'; retryAt: number };
type Shared = Entry | { kind: 'given_back' };

const hashKeys = new WeakMap<Vault, Buffer>();

/** The keyed hash naming one linked account of one lender's connection (hex, 128 bits). */
export function linkReadKey(vault: Vault, lenderId: string, connectionId: string, link: BankLink): string {
  let key = hashKeys.get(vault);
  if (!key) hashKeys.set(vault, (key = vault.derive('bank-link-reads')));
  const parts = link.provider === 'plaid' ? ['plaid', link.accessToken, link.accountId] : ['stripe', link.account];
  return new Bun.CryptoHasher('sha256', key).update([lenderId, connectionId, ...parts].join('\0')).digest('hex').slice(0, 32);
}

/** This process's memory of linked accounts' last answers and of the reads of them under way. */
export class LinkReads {
  private readonly entries = new Map<string, Entry>();
  private readonly running = new Map<string, Promise<Shared>>();
  constructor(private readonly max = LINK_READS_MAX) {}

  /**
   * One item's read of the account named `key`: the answer remembered within `windowMs` of `now()`, else the
   * read of it under way, else `read()` (the one call), remembered for the items after it.
   */
  async read(key: string, opts: { now: () => number; windowMs: number; self: Omit<ReusedFrom, 'at'>; read: () => Promise<LinkedReadResult | 'given_back'> }): Promise<ItemRead> {
    const known = this.recent(key, opts.now(), opts.windowMs);
    if (known) return known.kind === 'answer' ? { kind: 'reused', answer: known.answer, from: known.from } : known;
    const under = this.running.get(key);
    if (under) {
      const r = await under;
      return r.kind === 'answer' ? { kind: 'reused', answer: r.answer, from: r.from } : r;
    }
    // Nothing awaited between the look above and this: a second read of the account finds this one under way.
    const shared = this.ask(key, opts);
    this.running.set(key, shared);
    try {
      const r = await shared;
      return r.kind === 'answer' ? { kind: 'fresh', answer: r.answer, from: r.from } : r;
    } finally {
      if (this.running.get(key) === shared) this.running.delete(key);
    }
  }

  /** The account's remembered answer forgotten: the next read asks the provider (its link was repaired). */
  forget(key: string): void {
    this.entries.delete(key);
  }

  /** The accounts remembered now (expired ones included until they are looked at or pushed out). */
  get size(): number {
    return this.entries.size;
  }

  private async ask(key: string, opts: { now: () => number; self: Omit<ReusedFrom, 'at'>; read: () => Promise<LinkedReadResult | 'given_back'> }): Promise<Shared> {
    const r = await opts.read();
    if (r === 'given_back') return { kind: 'given_back' };
    const entry: Entry = r.kind === 'pending' ? r : { kind: 'answer', answer: r, from: { ...opts.self, at: opts.now() } };
    this.remember(key, entry);
    return entry;
  }

  private recent(key: string, now: number, windowMs: number): Entry | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.kind === 'answer' ? now - e.from.at < windowMs : now < e.retryAt) return e;
    this.entries.delete(key);
    return undefined;
  }

  private remember(key: string, e: Entry): void {
    // Written again at the end: the map's order is the order of the reads, the oldest first out when full.
    this.entries.delete(key);
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, e);
  }
}

const linkReads = new WeakMap<object, LinkReads>();
/** One memory of linked accounts' answers per database, shared by every tick. */
export function linkReadsOf(deps: { db: object }): LinkReads {
  let l = linkReads.get(deps.db);
  if (!l) linkReads.set(deps.db, (l = new LinkReads()));
  return l;
}

// A result that took an earlier read's answer says so in its detail, beside the answer's own cause (a failure's
// relink_required, no_balance…): as JSON, {"cause": …, "reused_from": {"batch_id", "authorizer_unique_id", "at"}}.
// Any other detail is the cause alone, as it always was; a cause never starts with a brace.

/** The detail of a result that reuses the answer of `from`, whose own cause was `cause`. */
export function reusedDetail(cause: string | null, from: ReusedFrom): string {
  return JSON.stringify({ cause, reused_from: { batch_id: from.batchId, authorizer_unique_id: from.aid, at: from.at } });
}

/** A result's detail read back: the answer's cause, and the read it reuses when it reuses one. */
export function detailOf(detail: string | null): { cause: string | null; reusedFrom: ReusedFrom | null } {
  if (detail === null || !detail.startsWith('{')) return { cause: detail, reusedFrom: null };
  try {
    const d = JSON.parse(detail) as { cause?: unknown; reused_from?: { batch_id?: unknown; authorizer_unique_id?: unknown; at?: unknown } };
    const f = d.reused_from;
    const from = f && typeof f.batch_id === 'string' && typeof f.authorizer_unique_id === 'string' && typeof f.at === 'number' ? { batchId: f.batch_id, aid: f.authorizer_unique_id, at: f.at } : null;
    return { cause: typeof d.cause === 'string' ? d.cause : null, reusedFrom: from };
  } catch {
    return { cause: detail, reusedFrom: null };
  }
}
