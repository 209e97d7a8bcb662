// What both engines' return-rate stores share: the statuses that keep a row from counting as a debit that went
// to the bank, written once so that the two engines, and every question asked of the debits (the rates, the
// monthly ACH report's count and total), count the same rows.

/** A payment of the service's own in these statuses never reached the bank, or has not yet. */
export const NOT_SENT = `'scheduled', 'initiating', 'not_attempted', 'invalid', 'voided'`;

/** An uploaded result in these statuses is not a debit that went to the bank. */
export const NOT_DEBITED = `'pending', 'voided', 'invalid', 'not_attempted'`;
