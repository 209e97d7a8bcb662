// Nacha return codes as one table: every processor transformer and the results upload read codes through
// it. R01 and R09 (funds) leave a borrower eligible for a reinitiation; any other code stops collection.

export type ReturnClass = 'retryable' | 'stop';

export const RETURN_CODES: Record<string, { description: string; class: ReturnClass }> = {
  R01: { description: 'Insufficient funds', class: 'retryable' },
  R02: { description: 'Account closed', class: 'stop' },
  R03: { description: 'No account / unable to locate account', class: 'stop' },
  R04: { description: 'Invalid account number', class: 'stop' },
  R05: { description: 'Unauthorized debit to consumer account', class: 'stop' },
  R06: { description: 'Returned per originating bank request', class: 'stop' },
  R07: { description: 'Authorization revoked by customer', class: 'stop' },
  R08: { description: 'Payment stopped', class: 'stop' },
  R09: { description: 'Uncollected funds', class: 'retryable' },
  R10: { description: 'Customer advises not authorized', class: 'stop' },
  R11: { description: 'Customer advises entry not in accordance with the terms of the authorization', class: 'stop' },
  R12: { description: 'Account sold to another institution', class: 'stop' },
  R13: { description: 'Invalid ACH routing number', class: 'stop' },
  R14: { description: 'Representative payee deceased', class: 'stop' },
  R15: { description: 'Beneficiary or account holder deceased', class: 'stop' },
  R16: { description: 'Account frozen', class: 'stop' },
  R17: { description: 'File record edit criteria', class: 'stop' },
  R20: { description: 'Non-transaction account', class: 'stop' },
  R23: { description: 'Credit entry refused by receiver', class: 'stop' },
  R24: { description: 'Duplicate entry', class: 'stop' },
  R29: { description: 'Corporate customer advises not authorized', class: 'stop' },
  R31: { description: 'Permissible return entry', class: 'stop' },
  R33: { description: 'Return of XCK entry', class: 'stop' },
};

/** The unauthorized returns (Nacha's unauthorized return rate counts these). */
export const UNAUTHORIZED_RETURNS = ['R05', 'R07', 'R10', 'R11', 'R29', 'R51'] as const;
export const isUnauthorizedReturn = (code: string | null | undefined): boolean => code != null && (UNAUTHORIZED_RETURNS as readonly string[]).includes(code);

/** R01 and R09 allow the debit to be tried again when funds suffice; every other code stops collection. */
export const isRetryableReturn = (code: string | null | undefined): boolean =>
  code != null && RETURN_CODES[code]?.class === 'retryable';

/** `R1`, `r01`, `R01 - Insufficient Funds` → `R01`; null when the text does not start with an R-code. */
export function normalizeReturnCode(text: string): string | null {
  const m = /^\s*r(\d{1,2})(?!\d)/i.exec(text);
  if (!m) return null;
  return `R${m[1]!.padStart(2, '0')}`;
}
