import { describe, expect, test } from 'bun:test';
import { fromResponseBody, toRequestBody } from '../../../src/adapters/bank-data/http-contract';
import { FAILURE_STATUS_CODES } from '../../../src/adapters/bank-data/types';

describe('fromResponseBody', () => {
  test('success, failures and unknown codes', () => {
    expect(fromResponseBody({ balance_status_code: 0, balance: 10 })).toEqual({ kind: 'balance', balanceCents: 1000 });
    for (const code of FAILURE_STATUS_CODES) {
      expect(fromResponseBody({ balance_status_code: code, balance: null })).toEqual({ kind: 'failed', statusCode: code });
    }
    expect(fromResponseBody({ balance_status_code: 1, balance: null })).toEqual({ kind: 'failed', statusCode: 9000 });
  });

  test('answers outside the contract', () => {
    for (const body of [null, 'x', 5, [], {}, { balance_status_code: -1 }, { balance_status_code: 1.5 }, { balance_status_code: 0 }]) {
      expect(fromResponseBody(body)).toBeNull();
    }
  });
});

describe('toRequestBody', () => {
  test('a card read with only the required fields sends every key, null when unknown', () => {
    const body = toRequestBody({
      authorizerUniqueId: 'c-1',
      paymentType: 'DEBIT_CARD',
      routingNumber: null,
      accountNumber: null,
      debitCardNumber: '4111111111111111',
      expirationMonth: 4,
      expirationYear: 2030,
    });
    expect(Object.keys(body)).toHaveLength(15);
    expect(body).toMatchObject({ payment_type: 'DEBIT_CARD', debit_card_number: '4111111111111111', expiration_month: 4, expiration_year: 2030, cvv: null, date_of_birth: null });
  });
});
