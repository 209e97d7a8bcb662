import type { EnrollmentChangeChain, JobContext } from '../deps';
import type { Tx } from '../platform/context';
import { holdChain } from './collection/chain';
import { voidScheduledOnStop } from './collection/decide';
import { eraseHistory, wantHistory } from './pay-cycles/history';

// What a change of a borrower's enrollment sets off in the features above enrollments, in one place. The
// enrollments feature sits below collection and pay cycles (collection reads the monitor, pay cycles time its
// reads), so the composition root hands it this chain (deps.enrollmentChanges) instead of it importing them.
// Each step runs in the transaction of the change:
//   1. a borrower re-sent while monitored: its debt's chain of presentments is counted again from its
//      payments, and a rule that holds it (a full chain, a new authorization needed) blocks it at once
//      (collection/chain.ts);
//   2. borrowers enrolled or re-sent, and held borrowers that became readable: those with a linked account
//      want their transaction history read, due at once (pay-cycles/history.ts);
//   3. monitoring stopped (removal, erasure): a payment of the borrower scheduled and not sent is voided, its
//      slot given back (collection/decide.ts);
//   4. erasure: the deposits stored for the borrowers' pay cycles go with their personal data.

type InTx = JobContext & { tx: Tx };

export const enrollmentChangeChain: EnrollmentChangeChain = {
  resent: (ctx: InTx, enrollmentId: string, now: number) => holdChain(ctx, enrollmentId, now, { recount: true }),
  wantHistory: (ctx: InTx, lenderId: string, enrollmentIds: readonly string[], now: number) => wantHistory(ctx, lenderId, enrollmentIds, now),
  stopped: (ctx: InTx, enrollmentId: string) => voidScheduledOnStop(ctx, { enrollmentId }),
  erased: (ctx: InTx, enrollmentIds: readonly string[]) => eraseHistory(ctx, enrollmentIds),
};
