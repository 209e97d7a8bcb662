import type { enrollments } from '../../../db/schema';
import type { PlatformDeps } from '../../platform/context';
import type { NormalizedAuthorizer } from '../authorizers/rules';
import { packSensitive, unpackSensitive } from '../balance-requests/payload';

// A borrower as stored: the enrollment row, and the personal data sealed in it. Read by the enrollment
// services, the monitoring reads, the search index and dispatch alike.

export type Enrollment = typeof enrollments.$inferSelect;

/** What is sealed per borrower: the fields a balance read needs, and the rest of the personal data. */
export interface SealedBorrower {
  s: NormalizedAuthorizer['sensitive'];
  phone: string | null;
  zip: string | null;
}

// Sealed in the compact positional form of balance payloads: a third of the bytes to seal, write and fsync
// for each of up to 1000 borrowers of a request.
export const sealBorrower = (deps: Pick<PlatformDeps, 'vault'>, b: SealedBorrower): string =>
  deps.vault.seal(JSON.stringify([packSensitive([b.s]), b.phone, b.zip]));

export function openBorrower(deps: Pick<PlatformDeps, 'vault'>, sealed: string): SealedBorrower {
  const [s, phone, zip] = JSON.parse(deps.vault.open(sealed)) as [string, string | null, string | null];
  return { s: unpackSensitive(s)[0]!, phone, zip };
}
