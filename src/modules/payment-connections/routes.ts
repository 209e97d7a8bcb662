import { Elysia, t } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import { schemaBody } from '../../http/body';
import type { Auth } from '../../http/auth';
import { Connection, ConnectionList, CreateConnectionBody, UpdateConnectionBody } from './model';
import { createConnection, deleteConnection, listConnections, updateConnection } from './service';

const tags = ['Payments'];
const IdParams = t.Object({ id: t.String({ description: 'id of the processor key' }) });
const early = (description: string) => maturity('Early Access', description);

export const paymentConnectionRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/payment_connections', normalize: false })
    .use(auth)
    .post(
      '',
      async ({ lender, body, set }) => {
        const res = await createConnection({ ctx: { lender, deps }, input: { body } });
        set.status = 201;
        return res;
      },
      {
        auth: true,
        ...schemaBody(CreateConnectionBody),
        response: { 201: Connection, ...errors(400, 401, 409, 413, 415, 429, 503) },
        detail: {
          tags,
          summary: 'Register a processor key',
          ...early(
            'api_key and rail_scope are required. A key is the default for its rail_scope (is_default) or tagged ' +
              '(merchant_ref), never both; at most one default per rail_scope and one key per rail_scope within a tag ' +
              '(409 otherwise, naming the clash). The key is checked at its processor first: refused → 400, processor ' +
              'unreachable → 503; in both cases nothing is stored. It is sealed in the vault at once and never returned; ' +
              'only key_last4 is shown.',
          ),
        },
      },
    )
    .get('', ({ lender }) => listConnections({ ctx: { lender, deps } }), {
      auth: true,
      response: { 200: ConnectionList, ...errors(401, 429) },
      detail: {
        tags,
        summary: 'List processor keys',
        ...early(
          'Defaults first, then oldest first. missing_default_rails lists the payment types with no default key ' +
            '(borrowers enrolled without merchant_ref are skipped for those); ingested and matched count the ' +
            'processor payments read through the keys and those matched to a borrower.',
        ),
      },
    })
    .patch(
      '/:id',
      ({ lender, params, body }) => updateConnection({ ctx: { lender, deps }, input: { id: params.id, body } }),
      {
        auth: true,
        params: IdParams,
        ...schemaBody(UpdateConnectionBody),
        response: { 200: Connection, ...errors(400, 401, 404, 409, 413, 415, 429, 503) },
        detail: {
          tags,
          summary: 'Change a processor key',
          ...early(
            'At least one of label, rail_scope, is_default, api_key; merchant_ref is never accepted. is_default true ' +
              'promotes an untagged key, swapping with the current default of its rail_scope (a tagged key cannot be ' +
              'promoted: 400); false demotes it. Moving a default onto a rail_scope that has another default, or a tagged ' +
              'key onto a rail_scope its tag already has, is 409. A new api_key is checked at its processor and replaces ' +
              'the old one; if anything fails the old key stays. Another lender’s key is 404.',
          ),
        },
      },
    )
    .delete(
      '/:id',
      async ({ lender, params, set }) => {
        await deleteConnection({ ctx: { lender, deps }, input: { id: params.id } });
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      {
        auth: true,
        params: IdParams,
        response: { 204: t.Void({ description: 'Deleted' }), ...errors(401, 404, 429) },
        detail: {
          tags,
          summary: 'Delete a processor key',
          ...early(
            'Removes the key and erases it; always allowed, defaults included (their payment types fall back to a ' +
              '`both` default if one exists). Payments and events already read through it are kept. Another lender’s ' +
              'key, or one already deleted, is 404.',
          ),
        },
      },
    );
