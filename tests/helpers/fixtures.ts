// Sandbox values (the README's "Sandbox test values"): routing 110000000 is "Sandbox Bank"; the last 7 digits
// of an account number are the balance in cents; 9999CCCC answers status code CCCC; 9998… fails transiently.
export const SANDBOX_BANK = '110000000';
export const SANDBOX_TESTING_BANK = '110000013';
export const SANDBOX_UNSUPPORTED_BANK = '110000026';

/** A borrower for enrollment with every required field; the amount in cents. */
export function enrollBorrower(id: string, over: Record<string, unknown> = {}) {
  return {
    authorizer_unique_id: id,
    first_name: 'Ada',
    last_name: 'Lovelace',
    phone_number: '2025550143',
    date_of_birth: { day: 10, month: 12, year: 1985 },
    address: { zip_code: '02139' },
    ssn: '123456789',
    account_number: '0001234567',
    routing_number: SANDBOX_BANK,
    collectable_amount: 42500,
    days_past_due: 35,
    ...over,
  };
}

/**
 * An account number of the i-th borrower's own (its sandbox balance $12,345.67, as the fixture's): borrowers
 * that share an account share its state, and one's return that blocks the account (R10, R02…) blocks them all.
 */
export const ownAccount = (i: number): string => `${String(i + 1).padStart(3, '0')}1234567`;

export function bankAuthorizer(id: string, over: Record<string, unknown> = {}) {
  return { authorizer_unique_id: id, ssn: '123456789', account_number: '0001234567', routing_number: SANDBOX_BANK, ...over };
}

/** A Luhn-valid 16-digit Visa number whose balance digits (the 7 before the check digit) are `cents`. */
export function cardNumberWithBalance(cents: number): string {
  const digits = '40000000' + String(cents).padStart(7, '0').slice(-7);
  let sum = 0;
  for (let i = 0; i < 15; i++) {
    let d = Number(digits[14 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return digits + String((10 - (sum % 10)) % 10);
}
