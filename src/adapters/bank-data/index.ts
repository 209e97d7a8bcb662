import type { Clock } from '../../platform/clock';
import { refusedInTransaction } from '../../platform/tx-lock';
import type { CallObserver } from '../../platform/provider-calls';
import type { RoutingDirectory } from '../routing/directory';
import { HttpBalanceProvider } from './http';
import { SandboxBalanceProvider } from './sandbox';
import type { BalanceProvider } from './types';
import type { LinkedSources } from './linked';
import { PlaidSource } from './plaid';
import { StripeFcSource } from './stripe-fc';

export { HttpBalanceProvider, type HttpBalanceProviderOptions } from './http';
export { SandboxBalanceProvider } from './sandbox';
export { PlaidSource } from './plaid';
export { StripeFcSource } from './stripe-fc';
export * from './linked';
export {
  FAILURE_STATUS_CODES,
  OTHER_ERROR_CODE,
  TransientProviderError,
  isFailureStatusCode,
  hasHistory,
  HISTORY_MAX_PAGES,
  type HistoryCredit,
  type HistoryResult,
  type HistoryWindow,
  type TransactionHistorySource,
  type BalanceProvider,
  type BalanceReadRequest,
  type BalanceReadResult,
  type FailureStatusCode,
} from './types';

export interface BankDataConfig {
  bankDataProvider: 'sandbox' | 'http';
  bankDataUrl: string | null;
  bankDataToken: string | null;
  sandboxLatencyMs: number;
}

/** The provider named by BANK_DATA_PROVIDER; the sandbox unless the operator points the service at a real source. */
export function createBalanceProvider(
  config: BankDataConfig,
  directory: RoutingDirectory,
  logger?: { warn(obj: object, msg: string): void },
  clock?: Clock,
  onCall?: CallObserver,
): BalanceProvider {
  if (config.bankDataProvider === 'http') {
    // loadConfig already refuses this combination; the check keeps a hand-built config from failing per read.
    if (config.bankDataUrl === null) throw new Error('BANK_DATA_URL is required when BANK_DATA_PROVIDER=http');
    return refusedInTransaction('the bank-data provider', new HttpBalanceProvider({ url: config.bankDataUrl, token: config.bankDataToken, logger, onCall }));
  }
  return refusedInTransaction('the bank-data provider', new SandboxBalanceProvider({ directory, latencyMs: config.sandboxLatencyMs, clock }));
}

/** The sources of linked accounts, each at its provider's address or the one configured for it. */
export function createLinkedSources(
  config: { plaidApiUrl: string | null; stripeApiUrl: string | null; providerTimeScale?: number },
  observer?: (provider: 'plaid' | 'stripe') => CallObserver,
): LinkedSources {
  const timeScale = config.providerTimeScale ?? 1;
  return {
    plaid: refusedInTransaction('Plaid', new PlaidSource({ apiUrl: config.plaidApiUrl, timeScale, onCall: observer?.('plaid') })),
    stripe: refusedInTransaction('Stripe Financial Connections', new StripeFcSource({ apiUrl: config.stripeApiUrl, timeScale, onCall: observer?.('stripe') })),
  };
}
