import type { Ctx } from '../../deps';
import type { Tx } from '../../platform/context';
import { madeForAnotherLender, matchReference, namesInReference, REFERENCE_PREFIX, type MatchSource, type PaymentMatch } from '../collection/reference';
import type { ParsedRow } from './rules';
import { policyOf } from '../collection-policy/service';

// Matching an upload's rows to the lender's borrowers and payments: by identifier, by the service's own
// reference, or by a DRS- reference that names a borrower (collection/reference.ts), looked up a slice at a
// time. The decision on each matched row is slice.ts's.

/**
 * What matching needs of a slice of rows, looked up for the whole slice at once by key (no search per row):
 * borrowers by identifier, the lender's payments by reference, the borrowers a DRS- reference could name, and
 * whether a DRS- reference no row names a borrower of is another lender's payment. Borrowers are remembered
 * across slices, as a file has many rows per borrower, and so is whether a borrower's bank account lacks
 * validation evidence (nothing an upload records changes it). Matching itself then reads nothing. A Lookups
 * lives for one transaction (or a dry run's snapshot).
 */
export class Lookups {
  /** Identifier → enrollment id, or null for none. */
  private readonly borrowers = new Map<string, string | null>();
  private payments = new Map<string, { id: string; enrollmentId: string; aid: string; amount: number }>();
  /** This slice's references of payments the service made for another lender. */
  private others = new Set<string>();

  /** Enrollment id → whether its bank account lacks validation evidence. */
  private readonly unvalidated = new Map<string, boolean>();

  constructor(private readonly tx: Ctx & { tx: Tx }) {}

  /** Those of the borrowers (enrollment ids) whose bank account lacks validation evidence, where the lender's policy requires it. */
  async unvalidatedAmong(enrollmentIds: readonly string[]): Promise<Set<string>> {
    if (enrollmentIds.length === 0) return new Set();
    // The policy is read once a transaction (policyOf remembers it in the transaction's scope).
    if (!(await policyOf(this.tx, this.tx.lender.id)).requireAccountValidation) return new Set();
    const unknown = enrollmentIds.filter((id) => !this.unvalidated.has(id));
    if (unknown.length > 0) {
      for (const id of unknown) this.unvalidated.set(id, false);
      for (const id of await this.tx.deps.stores.bankAccounts.unvalidatedAmong(this.tx, unknown)) this.unvalidated.set(id, true);
    }
    return new Set(enrollmentIds.filter((id) => this.unvalidated.get(id)));
  }

  async load(slice: ParsedRow[]): Promise<void> {
    const lenderId = this.tx.lender.id;
    const aids = new Set<string>();
    const refs: string[] = [];
    const unnamed: string[] = [];
    for (const p of slice) {
      if (p.authorizerUniqueId) aids.add(p.authorizerUniqueId);
      // Every reference is looked up among the service's own payments, named borrower or not.
      if (p.reference) {
        refs.push(p.reference);
        if (!p.authorizerUniqueId) unnamed.push(p.reference);
      }
    }
    this.payments = new Map(refs.length ? (await this.tx.deps.stores.uploads.paymentsAmong(this.tx, lenderId, refs)).map((x) => [x.reference, x]) : []);
    this.others = new Set();
    for (const r of unnamed) {
      if (this.payments.has(r)) continue;
      for (const name of namesInReference(r)) aids.add(name);
      // Only a DRS- reference can be another lender's payment (matchReference asks only then).
      if (r.startsWith(REFERENCE_PREFIX) && (await madeForAnotherLender(this.tx, lenderId, r))) this.others.add(r);
    }
    const unknown = [...aids].filter((a) => !this.borrowers.has(a));
    if (unknown.length === 0) return;
    for (const a of unknown) this.borrowers.set(a, null);
    for (const b of await this.tx.deps.stores.enrollments.borrowersAmong(this.tx, lenderId, unknown)) this.borrowers.set(b.aid, b.id);
  }

  /** authorizer_unique_id first; else the one matching of a reference, from this slice's look-ups. */
  match(p: ParsedRow): PaymentMatch | null {
    // A reference of one of the service's own payments is that payment, whoever the row names: the row is the
    // lender's report of it, and the processor is asked what became of it (collection/record.ts).
    const own = p.reference ? this.payments.get(p.reference) : undefined;
    if (own && (!p.authorizerUniqueId || p.authorizerUniqueId === own.aid)) {
      return { enrollmentId: own.enrollmentId, authorizerUniqueId: own.aid, paymentId: own.id, amountCents: own.amount };
    }
    if (p.authorizerUniqueId) {
      const id = this.borrowers.get(p.authorizerUniqueId);
      return id ? { enrollmentId: id, authorizerUniqueId: p.authorizerUniqueId, paymentId: null, amountCents: null } : null;
    }
    if (!p.reference) return null;
    return matchReference(this.source, p.reference, { prefixed: false });
  }

  private readonly source: MatchSource = {
    payment: (reference) => this.payments.get(reference) ?? null,
    borrowers: (ids) => {
      const found = new Map<string, string>();
      for (const id of ids) {
        const e = this.borrowers.get(id);
        if (e) found.set(id, e);
      }
      return found;
    },
    othersPayment: (reference) => this.others.has(reference),
  };
}

