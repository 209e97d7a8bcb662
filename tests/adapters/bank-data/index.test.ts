import { describe, expect, test } from 'bun:test';
import { createBalanceProvider, HttpBalanceProvider, SandboxBalanceProvider } from '../../../src/adapters/bank-data';
import { loadConfig } from '../../../src/config';
import { RoutingDirectory } from '../../../src/adapters/routing/directory';

describe('createBalanceProvider', () => {
  const directory = new RoutingDirectory();

  test('the sandbox by default', async () => {
    const provider = createBalanceProvider(loadConfig({}), directory);
    expect(provider).toBeInstanceOf(SandboxBalanceProvider);
    const result = await provider.read({
      authorizerUniqueId: 'a',
      paymentType: 'ACCOUNT_NUMBER',
      routingNumber: '110000013',
      accountNumber: '0001234567',
      debitCardNumber: null,
    });
    expect(result).toEqual({ kind: 'failed', statusCode: 3310 });
  });

  test('the HTTP provider when configured', () => {
    const config = loadConfig({ BANK_DATA_PROVIDER: 'http', BANK_DATA_URL: 'https://bank-data.example', BANK_DATA_TOKEN: 't' });
    expect(createBalanceProvider(config, directory)).toBeInstanceOf(HttpBalanceProvider);
  });

  test('http without a URL is refused up front', () => {
    expect(() =>
      createBalanceProvider({ bankDataProvider: 'http', bankDataUrl: null, bankDataToken: null, sandboxLatencyMs: 0 }, directory),
    ).toThrow(/BANK_DATA_URL/);
  });
});
