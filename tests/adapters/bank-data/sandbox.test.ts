import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { SandboxBalanceProvider } from '../../../src/adapters/bank-data/sandbox';
import {
  FAILURE_STATUS_CODES,
  TransientProviderError,
  type BalanceReadRequest,
} from '../../../src/adapters/bank-data/types';
import { RoutingDirectory } from '../../../src/adapters/routing/directory';

const provider = new SandboxBalanceProvider({ directory: new RoutingDirectory(), latencyMs: 0 });

function account(accountNumber: string, routingNumber = '110000000'): BalanceReadRequest {
  return { authorizerUniqueId: 'a-1', paymentType: 'ACCOUNT_NUMBER', routingNumber, accountNumber, debitCardNumber: null };
}

function card(debitCardNumber: string, routingNumber: string | null = null): BalanceReadRequest {
  return { authorizerUniqueId: 'c-1', paymentType: 'DEBIT_CARD', routingNumber, accountNumber: null, debitCardNumber };
}

describe('SandboxBalanceProvider: account reads', () => {
  test('balance is the last 7 digits of the account number, in cents', async () => {
    expect(await provider.read(account('0001234567'))).toEqual({ kind: 'balance', balanceCents: 1234567 });
    expect(await provider.read(account('123456789012'))).toEqual({ kind: 'balance', balanceCents: 6789012 });
    expect(await provider.read(account('5550000000'))).toEqual({ kind: 'balance', balanceCents: 0 });
    expect(await provider.read(account('4250'))).toEqual({ kind: 'balance', balanceCents: 4250 });
  });

  test.each([...FAILURE_STATUS_CODES])('9999%i… answers that status code', async (code) => {
    expect(await provider.read(account(`9999${code}00001`))).toEqual({ kind: 'failed', statusCode: code });
    expect(await provider.read(account(`9999${code}`))).toEqual({ kind: 'failed', statusCode: code });
  });

  test('9999 with a code outside the spec answers 9000', async () => {
    for (const n of ['99990000123', '99991234', '99993301', '999912', '9999abcd']) {
      expect(await provider.read(account(n))).toEqual({ kind: 'failed', statusCode: 9000 });
    }
  });

  test('9998… fails transiently on every attempt', async () => {
    for (let i = 0; i < 3; i++) {
      await expect(provider.read(account('99981234567'))).rejects.toBeInstanceOf(TransientProviderError);
    }
  });

  test('the three sandbox banks', async () => {
    expect(await provider.read(account('0001234567', '110000000'))).toEqual({ kind: 'balance', balanceCents: 1234567 });
    expect(await provider.read(account('0001234567', '110000013'))).toEqual({ kind: 'failed', statusCode: 3310 });
    expect(await provider.read(account('0001234567', '110000026'))).toEqual({ kind: 'failed', statusCode: 3300 });
  });

  test('the bank is checked before the account number', async () => {
    expect(await provider.read(account('99981234567', '110000026'))).toEqual({ kind: 'failed', statusCode: 3300 });
    expect(await provider.read(account('99993200', '110000013'))).toEqual({ kind: 'failed', statusCode: 3310 });
  });

  test('a valid routing number that is not in the directory is not supported', async () => {
    expect(await provider.read(account('0001234567', '021000021'))).toEqual({ kind: 'failed', statusCode: 3300 });
  });

  test('institutions loaded from a FedACH file are supported', async () => {
    const { directory } = RoutingDirectory.fromFedAchFile(join(import.meta.dir, '../../fixtures/fedach-sample.txt'));
    const withFile = new SandboxBalanceProvider({ directory, latencyMs: 0 });
    expect(await withFile.read(account('0001234567', '021000021'))).toEqual({ kind: 'balance', balanceCents: 1234567 });
  });

  test('nothing to read from: no match', async () => {
    expect(await provider.read({ ...account('x'), accountNumber: null })).toEqual({ kind: 'failed', statusCode: 3400 });
    expect(await provider.read({ ...account('0001234567'), routingNumber: null })).toEqual({ kind: 'failed', statusCode: 3400 });
    expect(await provider.read(account('12ABCDEFG'))).toEqual({ kind: 'failed', statusCode: 3400 });
  });
});

describe('SandboxBalanceProvider: debit-card reads', () => {
  test('balance is the 7 digits before the check digit, in cents', async () => {
    expect(await provider.read(card('4111111111111111'))).toEqual({ kind: 'balance', balanceCents: 1111111 });
    expect(await provider.read(card('4000056655665556'))).toEqual({ kind: 'balance', balanceCents: 5566555 });
    expect(await provider.read(card('5200000000012348'))).toEqual({ kind: 'balance', balanceCents: 1234 });
  });

  test('a routing number is optional, and checked against the directory when given', async () => {
    expect(await provider.read(card('5200000000012348', '110000000'))).toEqual({ kind: 'balance', balanceCents: 1234 });
    expect(await provider.read(card('5200000000012348', '110000013'))).toEqual({ kind: 'failed', statusCode: 3310 });
    expect(await provider.read(card('5200000000012348', '110000026'))).toEqual({ kind: 'failed', statusCode: 3300 });
    expect(await provider.read(card('5200000000012348', '021000021'))).toEqual({ kind: 'failed', statusCode: 3300 });
  });

  test('no card number: no match', async () => {
    expect(await provider.read({ ...card('x'), debitCardNumber: null })).toEqual({ kind: 'failed', statusCode: 3400 });
  });
});

describe('SandboxBalanceProvider: latency', () => {
  test('each read waits the configured latency, failures included', async () => {
    const slow = new SandboxBalanceProvider({ directory: new RoutingDirectory(), latencyMs: 40 });
    const started = performance.now();
    await Promise.all([slow.read(account('0000000100')), slow.read(account('99993200'))]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
    const t2 = performance.now();
    await expect(slow.read(account('99980000'))).rejects.toBeInstanceOf(TransientProviderError);
    expect(performance.now() - t2).toBeGreaterThanOrEqual(35);
  });
});
