import { centsToDollars, MAX_AMOUNT_CENTS } from '../../platform/money';
import { Type, type Static } from '@sinclair/typebox';
import { identifierSchema, METADATA_KEY, METADATA_KEYS_MAX, METADATA_VALUE_MAX, textSchema } from '../../platform/fields';
import { Int } from '../../platform/schema';

// The authorizer's fields as TypeBox schemas: the OpenAPI document shows them, a request is checked against
// them (JSON bodies and balance CSV rows alike), and their types are the services' input types. Balance
// requests, schedules and enrollments build on them.

const text = (maxLength: number, description?: string) => Type.Optional(Type.String({ maxLength, ...(description ? { description } : {}) }));
/** A free-text field (a name, an address line): the text rule of platform/fields.ts. */
const freeText = (maxLength: number) => Type.Optional(textSchema({ maxLength }));

export const DateOfBirth = Type.Object(
  { day: Int({ minimum: 1, maximum: 31 }), month: Int({ minimum: 1, maximum: 12 }), year: Int({ minimum: 1900, maximum: 2100 }) },
  { additionalProperties: false },
);

export const Address = Type.Object(
  {
    street_address_line1: freeText(255),
    street_address_line2: freeText(255),
    city: freeText(255),
    state: freeText(255),
    zip_code: text(10, '5 digits, or ZIP+4; leading zeros significant'),
    country: freeText(255),
  },
  { additionalProperties: false },
);

export const Metadata = Type.Record(
  Type.String({ pattern: METADATA_KEY.source }),
  Type.Union([textSchema({ maxLength: METADATA_VALUE_MAX, lines: true }), Type.Number(), Type.Boolean()]),
  { maxProperties: METADATA_KEYS_MAX, additionalProperties: false, description: 'Caller data kept with the result; each key becomes a meta_<key> column of the CSV export' },
);

/** The authorizer's identifier: the caller's own, well-formed (see platform/fields.ts). */
export const AuthorizerId = identifierSchema("Caller's own stable identifier of the borrower");

/** A linked account at a bank-data source the lender holds a connection for (POST /v1/bank_data_connections). */
export const BankLink = Type.Union(
  [
    Type.Object(
      {
        provider: Type.Literal('plaid'),
        access_token: Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9_-]+$', description: 'The Plaid Item’s access_token' }),
        account_id: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$', description: 'The Plaid account_id of the account to read' }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        provider: Type.Literal('stripe'),
        account: Type.String({ minLength: 5, maxLength: 100, pattern: '^fca_[A-Za-z0-9]+$', description: 'A Stripe Financial Connections account id (fca_…)' }),
      },
      { additionalProperties: false },
    ),
  ],
  {
    description:
      'Read the balance from this linked account, through the lender’s bank-data connection for its provider, instead of the default source. Sealed like the other secrets; never returned.',
  },
);

/** What is shown of a bank_link: its provider and which account, never the access token. */
export const BankLinkView = Type.Object({
  provider: Type.Union([Type.Literal('plaid'), Type.Literal('stripe')]),
  account_last4: Type.Optional(Type.String({ description: 'Plaid: the last four characters of the account_id' })),
  account: Type.Optional(Type.String({ description: 'Stripe: the fca_… account id' })),
});

/** The identity fields every authorizer may carry, beside its identifier and payment information. */
export const IDENTITY_PROPERTIES = {
  authorizer_unique_id: AuthorizerId,
  first_name: freeText(255),
  last_name: freeText(255),
  phone_number: text(32, 'US phone number; exported as E.164'),
  date_of_birth: Type.Optional(DateOfBirth),
  address: Type.Optional(Address),
  zip_code: text(10, 'Accepted at the top level too (CSV shape)'),
  ssn: text(11, '9 digits, dashes allowed; leading zeros significant'),
  ein: text(11, '9 digits (10 accepted), dash allowed'),
  account_number: text(34, 'Bank account number; not validated for length or format'),
  routing_number: text(9, 'ABA routing number, 9 digits; leading zeros significant'),
  bank_link: Type.Optional(BankLink),
};

/** Card fields of a balance check (an enrollment carries a card in charge_instrument instead). */
export const CARD_PROPERTIES = {
  debit_card_number: text(23, 'Debit card number (approved lenders only)'),
  cvv: text(4),
  expiration_month: Type.Optional(Int({ minimum: 1, maximum: 12 })),
  expiration_year: Type.Optional(Int({ minimum: 2000, maximum: 2100 })),
};

export const AUTHORIZER_PROPERTIES = {
  ...IDENTITY_PROPERTIES,
  ...CARD_PROPERTIES,
  metadata: Type.Optional(Metadata),
};

export const ThresholdAmount = Type.Number({
  minimum: 0,
  // MAX_AMOUNT_CENTS in dollars: the largest amount any route accepts.
  maximum: centsToDollars(MAX_AMOUNT_CENTS),
  description: 'Dollars (at most two decimals); a balance that meets or exceeds it sends an alert',
});

/** An authorizer of a balance request or a balance CSV row. */
export const Authorizer = Type.Object(AUTHORIZER_PROPERTIES, { additionalProperties: false, title: 'Authorizer' });
/** An authorizer of a schedule: the same, with its own threshold. */
export const ScheduleAuthorizer = Type.Object(
  { ...AUTHORIZER_PROPERTIES, threshold_amount: Type.Optional(ThresholdAmount) },
  { additionalProperties: false },
);

/** An authorizer whose fields have the right shape, before its rules are checked (rules.ts). */
export type AuthorizerCandidate = Static<typeof ScheduleAuthorizer>;
