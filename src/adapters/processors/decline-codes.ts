// Card decline codes as one table (like the R-code table): which declines may be tried again and which must
// never be. Visa's category 1 (lost, stolen, closed or invalid account, no authorization) and Mastercard's
// merchant advice codes 03 and 21 forbid any retry; Stripe names them by these decline codes
// (docs.stripe.com/declines/codes). A decline that must not be retried stops the borrower with the code as
// its reason; any other non-funds decline stops it as `invalid`, as before; a decline for funds is a return R01.

export const DECLINE_CODES: Record<string, { retry: boolean; description: string }> = {
  insufficient_funds: { retry: true, description: 'Insufficient funds' },
  generic_decline: { retry: true, description: 'Declined for an unknown reason' },
  do_not_honor: { retry: true, description: 'Declined for an unknown reason' },
  processing_error: { retry: true, description: 'An error occurred while processing the card' },
  try_again_later: { retry: true, description: 'Try again later' },
  issuer_not_available: { retry: true, description: 'The card issuer could not be reached' },
  lost_card: { retry: false, description: 'The card is reported lost' },
  stolen_card: { retry: false, description: 'The card is reported stolen' },
  pickup_card: { retry: false, description: 'The card cannot be used (reported lost or stolen)' },
  restricted_card: { retry: false, description: 'The card cannot be used (restricted)' },
  fraudulent: { retry: false, description: 'Suspected fraud' },
  merchant_blacklist: { retry: false, description: 'Blocked by the merchant’s block list' },
  revocation_of_authorization: { retry: false, description: 'The cardholder revoked this authorization' },
  revocation_of_all_authorizations: { retry: false, description: 'The cardholder revoked every authorization' },
  stop_payment_order: { retry: false, description: 'The cardholder stopped this payment' },
  invalid_account: { retry: false, description: 'The card or account is invalid' },
  new_account_information_available: { retry: false, description: 'The card or account changed' },
  security_violation: { retry: false, description: 'Security violation' },
  card_not_supported: { retry: false, description: 'The card does not support this purchase' },
  expired_card: { retry: false, description: 'The card has expired' },
};

/** Whether this decline forbids any further attempt on the card. Unknown codes are not assumed to forbid it. */
export const mustNotRetry = (code: string | null | undefined): boolean => code != null && DECLINE_CODES[code]?.retry === false;
