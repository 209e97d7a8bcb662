import type { FieldSpec } from '../../platform/fields';

export { checkObject, objectSchema, schemaOf, type FieldSpec } from '../../platform/fields';

// The authorizer's fields, as one field table (platform/fields.ts): the OpenAPI schema and the one-pass
// reader (read.ts) both come from it. Balance requests, schedules and enrollments read authorizers through it.

export const DATE_OF_BIRTH: FieldSpec = {
  kind: 'object',
  required: ['day', 'month', 'year'],
  fields: {
    day: { kind: 'int', min: 1, max: 31 },
    month: { kind: 'int', min: 1, max: 12 },
    year: { kind: 'int', min: 1900, max: 2100 },
  },
};

export const ADDRESS: FieldSpec = {
  kind: 'object',
  fields: {
    street_address_line1: { kind: 'string', max: 255 },
    street_address_line2: { kind: 'string', max: 255 },
    city: { kind: 'string', max: 255 },
    state: { kind: 'string', max: 255 },
    zip_code: { kind: 'string', max: 10, description: '5 digits, or ZIP+4; leading zeros significant' },
    country: { kind: 'string', max: 255 },
  },
};

/** The identity and payment-information fields every authorizer may carry. */
export const AUTHORIZER_FIELDS: Record<string, FieldSpec> = {
  authorizer_unique_id: { kind: 'string', min: 1, max: 255, description: "Caller's own stable identifier of the borrower" },
  first_name: { kind: 'string', max: 255 },
  last_name: { kind: 'string', max: 255 },
  phone_number: { kind: 'string', max: 32, description: 'US phone number; exported as E.164' },
  date_of_birth: DATE_OF_BIRTH,
  address: ADDRESS,
  zip_code: { kind: 'string', max: 10, description: 'Accepted at the top level too (CSV shape)' },
  ssn: { kind: 'string', max: 11, description: '9 digits, dashes allowed; leading zeros significant' },
  ein: { kind: 'string', max: 11, description: '9 digits (10 accepted), dash allowed' },
  account_number: { kind: 'string', max: 34, description: 'Bank account number; not validated for length or format' },
  routing_number: { kind: 'string', max: 9, description: 'ABA routing number, 9 digits; leading zeros significant' },
  debit_card_number: { kind: 'string', max: 23, description: 'Debit card number (approved lenders only)' },
  cvv: { kind: 'string', max: 4 },
  expiration_month: { kind: 'int', min: 1, max: 12 },
  expiration_year: { kind: 'int', min: 2000, max: 2100 },
  metadata: { kind: 'metadata', description: 'Caller data kept with the result; each key becomes a meta_<key> column of the CSV export' },
};

export const THRESHOLD_FIELD: FieldSpec = {
  kind: 'number',
  min: 0,
  max: 1e12,
  description: 'Dollars (at most two decimals); a balance that meets or exceeds it sends an alert',
};

