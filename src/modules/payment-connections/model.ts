import { Type, type Static } from '@sinclair/typebox';
import { t } from 'elysia';
import { PROCESSOR_NAMES, RAIL_SCOPES, RAILS } from '../../../db/schema/enums';
import { Int, OneOf } from '../../platform/schema';
import { textSchema } from '../../platform/fields';
import { CREDENTIAL_PATTERN } from '../../platform/fields';

export const MERCHANT_REF = /^[a-z0-9_-]{1,64}$/;
export const LABEL_MAX = 80;

const ApiKey = Type.String({
  minLength: 1,
  maxLength: 255,
  // Printable ASCII without spaces, as processors issue keys: no control, format or surrogate character.
  pattern: CREDENTIAL_PATTERN,
  description: 'The processor key: sbx_… (sandbox), sk_live_/sk_test_/rk_live_/rk_test_ (Stripe). Sealed at once; never returned.',
});
const RailScope = OneOf(RAIL_SCOPES, { description: 'Payment types the key takes: ach, card or both' });
const IsDefault = Type.Boolean({ description: 'The default key for its rail_scope (not with merchant_ref)' });
const Label = textSchema({ minLength: 1, maxLength: LABEL_MAX, description: 'Shown in the portal; default "<Processor> key ending <last4>"' });

const connectionExample = {
  id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
  label: 'Sandbox key ending 0001',
  merchant_ref: null,
  rail_scope: 'both',
  is_default: true,
  key_last4: '0001',
  last_poll_at: null,
  last_poll_error: null,
  access_scope: 'lender_admins',
  processor: 'sandbox',
  created_at: '2026-11-21T10:00:00.000Z',
};

export const CreateConnectionBody = Type.Object(
  {
    api_key: ApiKey,
    rail_scope: RailScope,
    is_default: Type.Optional(IsDefault),
    merchant_ref: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: MERCHANT_REF.source,
        description: 'a tag of 1 to 64 lowercase letters, digits, dashes or underscores (fixed after creation)',
      }),
    ),
    label: Type.Optional(Label),
  },
  { additionalProperties: false, examples: [{ api_key: 'sbx_demo_0000000000000001', rail_scope: 'both', is_default: true }] },
);
export const UpdateConnectionBody = Type.Object(
  {
    label: Type.Optional(Label),
    rail_scope: Type.Optional(RailScope),
    is_default: Type.Optional(IsDefault),
    api_key: Type.Optional(ApiKey),
    // Named so that sending it says why it is refused, rather than "unknown field".
    merchant_ref: Type.Optional(Type.Never({ description: 'merchant_ref is fixed when a key is created; create a new key for another tag' })),
  },
  { additionalProperties: false, examples: [{ is_default: true }] },
);
export type CreateInput = Static<typeof CreateConnectionBody>;
export type UpdateInput = Static<typeof UpdateConnectionBody>;

export const Connection = t.Object(
  {
    id: t.String({ format: 'uuid' }),
    label: t.String(),
    merchant_ref: t.Nullable(t.String()),
    rail_scope: OneOf(RAIL_SCOPES),
    is_default: t.Boolean(),
    key_last4: t.Nullable(t.String({ description: 'Last four characters of the stored key' })),
    last_poll_at: t.Nullable(t.String({ format: 'date-time' })),
    last_poll_error: t.Nullable(t.String({ description: 'Why the last read at the processor failed' })),
    access_scope: t.Literal('lender_admins'),
    processor: OneOf(PROCESSOR_NAMES),
    created_at: t.String({ format: 'date-time' }),
  },
  { examples: [connectionExample] },
);

export const ConnectionList = t.Object(
  {
    connections: t.Array(Connection, { description: 'Defaults first, then oldest first' }),
    missing_default_rails: t.Array(OneOf(RAILS), { description: 'Payment types with no default key (empty when a both default exists)' }),
    ingested: Int({ description: 'Processor payments read through the keys' }),
    matched: Int({ description: 'Of those, matched to an enrolled borrower' }),
    last_poll_at: t.Nullable(t.String({ format: 'date-time' })),
  },
  {
    examples: [{ connections: [connectionExample], missing_default_rails: [], ingested: 0, matched: 0, last_poll_at: null }],
  },
);
