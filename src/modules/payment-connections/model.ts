import { t } from 'elysia';
import { PROCESSOR_NAMES, RAIL_SCOPES, RAILS } from '../../../db/schema/enums';
import { objectSchema, type FieldSpec } from '../../platform/fields';
import { Int, OneOf } from '../../platform/schema';

export const MERCHANT_REF = /^[a-z0-9_-]{1,64}$/;
export const LABEL_MAX = 80;


const API_KEY: FieldSpec = {
  kind: 'string',
  min: 1,
  max: 255,
  description: 'The processor key: sbx_… (sandbox), sk_live_/sk_test_/rk_live_/rk_test_ (Stripe). Sealed at once; never returned.',
};
const RAIL_SCOPE: FieldSpec = { kind: 'enum', values: RAIL_SCOPES, description: 'Payment types the key takes: ach, card or both' };
const IS_DEFAULT: FieldSpec = { kind: 'boolean', description: 'The default key for its rail_scope (not with merchant_ref)' };
const LABEL: FieldSpec = { kind: 'string', min: 1, max: LABEL_MAX, description: 'Shown in the portal; default "<Processor> key ending <last4>"' };

export const CREATE_FIELDS: Record<string, FieldSpec> = {
  api_key: API_KEY,
  rail_scope: RAIL_SCOPE,
  is_default: IS_DEFAULT,
  merchant_ref: {
    kind: 'string',
    min: 1,
    max: 64,
    pattern: MERCHANT_REF,
    description: 'a tag of 1 to 64 lowercase letters, digits, dashes or underscores (fixed after creation)',
  },
  label: LABEL,
};
export const CREATE_REQUIRED = ['api_key', 'rail_scope'];
export const UPDATE_FIELDS: Record<string, FieldSpec> = { label: LABEL, rail_scope: RAIL_SCOPE, is_default: IS_DEFAULT, api_key: API_KEY };

export interface CreateInput {
  api_key: string;
  rail_scope: (typeof RAIL_SCOPES)[number];
  is_default?: boolean;
  merchant_ref?: string;
  label?: string;
}
export type UpdateInput = Partial<Pick<CreateInput, 'api_key' | 'rail_scope' | 'is_default' | 'label'>>;

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

export const CreateConnectionBody = objectSchema(CREATE_FIELDS, CREATE_REQUIRED, {
  examples: [{ api_key: 'sbx_demo_0000000000000001', rail_scope: 'both', is_default: true }],
});
export const UpdateConnectionBody = objectSchema(UPDATE_FIELDS, [], { examples: [{ is_default: true }] });

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
