import { Elysia } from 'elysia';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps';
import { NotFound } from '../../../platform/errors';
import { validated } from '../../../platform/validation';
import { CreateBankDataConnectionBody } from '../../bank-data-connections/model';
import { createBankDataConnection, deleteBankDataConnection, listBankDataConnections } from '../../bank-data-connections/service';
import { formOf, page, portalSession, problemOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { Confirm, Csrf, Notice, Table, Time, type Message } from '../ui/components';

// /portal/payments/bank-data: the lender's bank-data connections (GET/POST/DELETE /v1/bank_data_connections),
// the credentials authorizers sent with a bank_link are read through. Beside Processor keys; forms are
// checked against the API's own schema, so the portal and the API refuse the same things.

const HERE = '/portal/payments/bank-data';
const PROVIDERS = { plaid: 'Plaid', stripe: 'Stripe Financial Connections' } as const;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);

const toCreate = (body: Record<string, unknown>) =>
  validated(
    CreateBankDataConnectionBody,
    body.provider === 'plaid'
      ? { provider: 'plaid', client_id: str(body.client_id), secret: str(body.secret), environment: str(body.environment) }
      : { provider: str(body.provider), api_key: str(body.api_key) },
  );

const DeleteForm = Type.Object({ action: Type.Literal('delete', { description: 'the action of the form' }) });

export const bankDataPages = (deps: Deps) => {
  const ctxOf = (s: PortalSession) => ({ lender: s.lender, deps });
  const render = async (s: PortalSession, message: Message = null, status = 200) => {
    const view = viewOf(deps, s, HERE);
    const csrf = view.user.csrf;
    const list = await listBankDataConnections({ ctx: ctxOf(s) });
    const rows = list.connections.map((c) => [
      PROVIDERS[c.provider],
      c.environment ?? '',
      `…${c.secret_last4 ?? c.key_last4 ?? ''}`,
      <Time at={c.created_at} now={view.now} />,
      c.last_read_at ? <Time at={c.last_read_at} now={view.now} /> : 'never',
      <a href={`${HERE}/${encodeURIComponent(c.id)}/delete`}>{`Delete the ${PROVIDERS[c.provider]} connection`}</a>,
    ]);
    return page(
      view,
      'Bank data',
      [
        <Notice message={message} />,
        <p>
          Authorizers sent with a <code>bank_link</code> have their balance read from the account they linked at Plaid or Stripe Financial Connections,
          with the credentials below. One connection per provider; the credentials are checked at the provider, then stored sealed and never shown again.
        </p>,
        <Table caption="Bank-data connections" headers={['Provider', 'Environment', 'Secret', 'Added', 'Last read', 'Actions']} rows={rows} />,
        <h2>Add Plaid</h2>,
        <form method="post" action={HERE}>
          <Csrf token={csrf} />
          <input type="hidden" name="provider" value="plaid" />
          <label for="client_id">Client ID</label>
          <input id="client_id" name="client_id" autocomplete="off" required />
          <label for="secret">Secret</label>
          <input id="secret" name="secret" type="password" autocomplete="off" required />
          <label for="environment">Environment</label>
          <select id="environment" name="environment" required>
            <option value="production">Production</option>
            <option value="sandbox">Sandbox</option>
          </select>
          <button type="submit">Add Plaid</button>
        </form>,
        <h2>Add Stripe Financial Connections</h2>,
        <form method="post" action={HERE}>
          <Csrf token={csrf} />
          <input type="hidden" name="provider" value="stripe" />
          <label for="fc_api_key">Stripe key allowed to read Financial Connections accounts</label>
          <input id="fc_api_key" name="api_key" type="password" autocomplete="off" required />
          <button type="submit">Add Stripe</button>
        </form>,
      ],
      status,
    );
  };

  return new Elysia({ name: 'portal-bank-data' })
    .use(portalSession(deps))
    .get(HERE, ({ session }) => render(session), { signedIn: true, detail: { hide: true } })
    .post(
      HERE,
      async ({ session, body }) => {
        try {
          const c = await createBankDataConnection({ ctx: ctxOf(session), input: { body: toCreate((body ?? {}) as Record<string, unknown>) } });
          return render(session, { kind: 'ok', text: `Added the ${PROVIDERS[c.provider]} connection.` });
        } catch (e) {
          return render(session, { kind: 'error', text: problemOf(e) }, 400);
        }
      },
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      `${HERE}/:id/delete`,
      async ({ session, params }) => {
        const c = (await listBankDataConnections({ ctx: ctxOf(session) })).connections.find((x) => x.id === params.id);
        if (!c) throw new NotFound('Bank-data connection', params.id);
        const view = viewOf(deps, session, HERE);
        return page(
          view,
          'Delete a bank-data connection',
          <Confirm
            question={<>{`Delete the ${PROVIDERS[c.provider]} connection (ending ${c.secret_last4 ?? c.key_last4 ?? ''})? The credentials are erased; linked authorizers of this provider fail their reads until a new one is added.`}</>}
            action={`${HERE}/${encodeURIComponent(c.id)}`}
            csrf={view.user.csrf}
            name="action"
            value="delete"
            label="Delete connection"
            cancel={HERE}
          />,
        );
      },
      { signedIn: true, detail: { hide: true } },
    )
    .post(
      `${HERE}/:id`,
      async ({ session, params, body }) => {
        try {
          formOf(DeleteForm, body);
          await deleteBankDataConnection({ ctx: ctxOf(session), input: { id: params.id } });
          return render(session, { kind: 'ok', text: 'Connection deleted.' });
        } catch (e) {
          if (e instanceof NotFound) throw e;
          return render(session, { kind: 'error', text: problemOf(e) }, 400);
        }
      },
      { signedIn: true, detail: { hide: true } },
    );
};
