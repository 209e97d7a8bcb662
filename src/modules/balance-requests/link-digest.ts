import type { BankLink } from '../../adapters/bank-data/linked';

/** What is shown of a link: its provider and which account, never the access token. */
export function linkView(link: BankLink) {
  return link.provider === 'plaid' ? { provider: 'plaid' as const, account_last4: link.accountId.slice(-4) } : { provider: 'stripe' as const, account: link.account };
}

/** A digest naming one link of one lender, for "told once" and "not read again" (the token never stored in it). */
export function linkDigest(lenderId: string, link: BankLink): string {
  const parts = link.provider === 'plaid' ? ['plaid', link.accessToken, link.accountId] : ['stripe', link.account];
  return new Bun.CryptoHasher('sha256').update([lenderId, ...parts].join('\n')).digest('hex');
}
