import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { packItems, packSensitive, unpackItems, unpackSensitive } from '../../../src/modules/balance-requests/payload';

const str = fc.option(fc.string(), { nil: null });
const num = fc.option(fc.integer({ min: 1, max: 3000 }), { nil: null });

describe('batch payload encoding', () => {
  test('sensitive fields survive a round trip', () => {
    const sensitive = fc.record({
      ssn: str,
      ein: str,
      accountNumber: str,
      debitCardNumber: str,
      cvv: str,
      expirationMonth: num,
      expirationYear: num,
      firstName: str,
      lastName: str,
      dateOfBirth: fc.option(fc.record({ day: fc.integer({ min: 1, max: 31 }), month: fc.integer({ min: 1, max: 12 }), year: fc.integer({ min: 1900, max: 2100 }) }), { nil: null }),
      street: str,
    });
    fc.assert(fc.property(fc.array(sensitive, { maxLength: 20 }), (list) => expect(unpackSensitive(packSensitive(list))).toEqual(list)));
  });

  test('queue items survive a round trip', () => {
    const item = fc.record({
      id: fc.string({ minLength: 1 }),
      type: fc.constantFrom('ACCOUNT_NUMBER' as const, 'DEBIT_CARD' as const),
      routing: str,
      phone: str,
      zip: str,
      meta: fc.option(fc.dictionary(fc.string({ minLength: 1 }), fc.oneof(fc.string(), fc.integer(), fc.boolean())), { nil: null }),
      threshold: fc.option(fc.integer(), { nil: null }),
    });
    fc.assert(fc.property(fc.array(item, { maxLength: 20 }), (list) => expect(unpackItems(packItems(list))).toEqual(list)));
  });
});
