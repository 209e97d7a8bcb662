import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { dollarsToCents, fromResponseBody, toRequestBody } from '../../../src/adapters/bank-data/http-contract';
import { FAILURE_STATUS_CODES } from '../../../src/adapters/bank-data/types';

describe('dollarsToCents', () => {
  test('any whole number of cents survives the trip through a JSON dollar amount', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e13, max: 1e13 }), (cents) => {
        const dollars = JSON.parse(JSON.stringify(cents / 100));
        return dollarsToCents(dollars) === cents && dollarsToCents((cents / 100).toFixed(2)) === cents;
      }),
    );
  });

  test('digits past the cent round half away from zero', () => {
    expect(dollarsToCents(1.005)).toBe(101);
    expect(dollarsToCents(1.004)).toBe(100);
    expect(dollarsToCents(-1.005)).toBe(-101);
    expect(dollarsToCents('2.499')).toBe(250);
    expect(dollarsToCents(1e-7)).toBe(0);
    expect(dollarsToCents(-0)).toBe(0);
    expect(Object.is(dollarsToCents('-0.001'), 0)).toBe(true);
  });

  test('anything that is not a decimal amount is refused', () => {
    for (const v of [null, undefined, true, {}, [], NaN, Infinity, '', '12,50', '$5', '1e3', '.5', '5.', 1e21, '99999999999999999.99']) {
      expect(dollarsToCents(v)).toBeNull();
    }
  });
});

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
