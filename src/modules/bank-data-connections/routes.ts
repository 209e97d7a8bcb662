import { Elysia, t } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import { schemaBody } from '../../http/body';
import type { Auth } from '../../http/auth';
import { BankDataConnection, BankDataConnectionList, BankDataConnectionUsage, CreateBankDataConnectionBody, UsageQuery } from './model';
import { createBankDataConnection, deleteBankDataConnection, listBankDataConnections } from './service';
import { connectionUsage } from './usage';

const tags = ['Balance checks'];
const IdParams = t.Object({ id: t.String({ description: 'id of the bank-data connection' }) });
const early = (description: string) => maturity('Early Access', description);

export const bankDataConnectionRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/bank_data_connections', normalize: false })
    .use(auth)
    .post(
      '',
      async ({ lender, body, set }) => {
        const res = await createBankDataConnection({ ctx: { lender, deps }, input: { body } });
        set.status = 201;
        return res;
      },
      {
        auth: true,
        ...schemaBody(CreateBankDataConnectionBody),
        response: { 201: BankDataConnection, ...errors(400, 401, 409, 413, 415, 429, 503) },
        detail: {
          tags,
          summary: 'Register bank-data credentials',
          ...early(
            'The lender’s credentials at a bank-data source, through which authorizers sent with a bank_link of that ' +
              'provider are read: Plaid (client_id, secret, environment) or Stripe Financial Connections (api_key). ' +
              'At most one connection per provider (409 otherwise, naming the one stored). The credentials are checked ' +
              'at the provider first: refused → 400, provider unreachable → 503; in both cases nothing is stored. They ' +
              'are sealed in the vault at once and never returned; only secret_last4 (Plaid) or key_last4 (Stripe) is shown.',
          ),
        },
      },
    )
    .get('', ({ lender }) => listBankDataConnections({ ctx: { lender, deps } }), {
      auth: true,
      response: { 200: BankDataConnectionList, ...errors(401, 429) },
      detail: {
        tags,
        summary: 'List bank-data connections',
        ...early('Oldest first, at most one per provider; last_read_at is the last balance read through the connection.'),
      },
    })
    .get('/:id/usage', ({ lender, params, query }) => connectionUsage({ ctx: { lender, deps }, input: { id: params.id, month: query.month } }), {
      auth: true,
      params: IdParams,
      query: UsageQuery,
      response: { 200: BankDataConnectionUsage, ...errors(400, 401, 404, 429) },
      detail: {
        tags,
        summary: 'Provider calls made through a bank-data connection',
        ...early(
          'What the lender’s reads cost at the provider: the requests the service sent through this connection in a ' +
            'month (UTC), per endpoint and per day (balance reads, refreshes and retrieves, transaction pages). Calls of ' +
            'the last few seconds on another replica show once written (every 5 s). A month not as YYYY-MM is 400; another ' +
            'lender’s connection, or a deleted one, is 404.',
        ),
      },
    })
    .delete(
      '/:id',
      async ({ lender, params, set }) => {
        await deleteBankDataConnection({ ctx: { lender, deps }, input: { id: params.id } });
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      {
        auth: true,
        params: IdParams,
        response: { 204: t.Void({ description: 'Deleted' }), ...errors(401, 404, 429) },
        detail: {
          tags,
          summary: 'Delete a bank-data connection',
          ...early(
            'Erases the credentials. Authorizers linked at its provider then fail their read with balance_status_code ' +
              '9000 until a new connection is stored. Another lender’s connection, or one already deleted, is 404.',
          ),
        },
      },
    );
