import { Elysia } from 'elysia';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps';
import { ENDPOINT_EVENT_TYPES, DELIVERY_STATES } from '../../../../db/schema/enums';
import { NotFound } from '../../../platform/errors';
import { createLenderKey, listKeys, revokeLenderKey, MAX_LIVE_API_KEYS, TooManyApiKeys } from '../../lenders/service';
import { createEndpoint, deleteEndpoint, listEndpoints } from '../../webhooks/endpoints';
import { readSecret, listDeliveries, rotateSecret } from '../../webhooks/service';
import { formOf, page, portalSession, problemOf, queryOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { ActionButton, Choice, Confirm, Csrf, Notice, Pager, Table, Time, type Message, type View } from '../ui/components';

// /portal/developers: what the operator's `bun run cli key` does, per lender (API keys), and the lender's
// webhooks: the signing secret, endpoints, and the delivery log.

const HERE = '/portal/developers';
const EVENT_HELP: Record<(typeof ENDPOINT_EVENT_TYPES)[number], string> = {
  PAYMENT_EVENT: 'every payment event of every borrower',
  RETURN_RATE_ALERT: 'a return-rate class changes status',
  ENROLLMENT_BLOCKED: 'collection of a borrower is blocked by a rule',
  PAYMENT_SCHEDULED: 'a payment is scheduled after its notice',
  BANK_LINK_RELINK_REQUIRED: 'a borrower’s linked account needs the borrower (relink, revoked, closed)',
  BANK_LINK_REPAIRED: 'a borrower’s linked account is well again',
  BANK_LINK_EXPIRING: 'a borrower’s consent to a linked account ends soon',
  ACCOUNT_CHANGE_NOTIFIED: 'a bank sent a Notification of Change for one of your bank accounts',
  ACCOUNT_CORRECTED: 'a Notification of Change was applied to the borrowers on an account',
  RIGHTS_NOTICE_DUE: 'a covered borrower’s second consecutive attempt failed for funds: send the consumer-rights notice',
  PAYMENT_NOTICE_DUE: 'a payment needs a notice sent inside its window before it goes out: send it and confirm it',
  FRAUD_ALERT_RAISED: 'a fraud-monitoring rule raised an alert: work it (clear it, confirm fraud, or ask for more)',
};

const EndpointForm = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    event_types: Type.Array(Type.Union(ENDPOINT_EVENT_TYPES.map((x) => Type.Literal(x))), { minItems: 1, maxItems: ENDPOINT_EVENT_TYPES.length }),
    description: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);

const DeliveryFilter = Type.Object({ status: Type.Optional(Type.Union(DELIVERY_STATES.map((x) => Type.Literal(x)))), next_page_token: Type.Optional(Type.String({ maxLength: 512 })) }, { additionalProperties: false });

async function DevelopersContent(props: {
  deps: Deps;
  s: PortalSession;
  view: View;
  query: { status?: string; next_page_token?: string };
  newKey?: string | null;
  secret?: { secret: string; created_at: string; previous_secret_expires_at: string | null } | null;
  message?: Message;
}) {
  const { deps, s, view } = props;
  const ctx = { lender: s.lender, deps };
  const keys = await listKeys(deps, s.lender.id);
  const endpoints = (await listEndpoints({ ctx })).endpoints;
  const filter = queryOf(DeliveryFilter, props.query);
  const deliveries = await listDeliveries({ ctx, input: { status: filter.status, limit: 25, next_page_token: filter.next_page_token } });
  const csrf = view.user.csrf;
  return (
    <>
      <Notice message={props.message} />
      <section aria-labelledby="keys">
        <h2 id="keys">API keys</h2>
        {props.newKey && (
          <article aria-labelledby="new-key">
            <h3 id="new-key">Your new API key</h3>
            <p>Copy it now: it is shown only this once, and the service keeps only its hash.</p>
            <label for="new-key-value">New API key</label>
            <input id="new-key-value" class="secret" readonly value={props.newKey} />
          </article>
        )}
        <Table
          caption={`Keys that call /v1 for this lender (at most ${MAX_LIVE_API_KEYS} not revoked)`}
          headers={['Key', 'Created', 'Last used', 'Revoked', 'Action']}
          rows={keys.map((k) => [
            <code>{`${k.prefix}…`}</code>,
            <Time at={k.createdAt} now={view.now} />,
            k.lastUsedAt === null ? 'never' : <Time at={k.lastUsedAt} now={view.now} />,
            k.revokedAt === null ? 'no' : <Time at={k.revokedAt} now={view.now} />,
            k.revokedAt === null ? <a href={`${HERE}/keys/${encodeURIComponent(k.id)}/revoke`}>{`Revoke ${k.prefix}…`}</a> : '',
          ])}
        />
        <ActionButton action={`${HERE}/keys`} csrf={csrf} label="Create API key" />
      </section>
      <section aria-labelledby="secret">
        <h2 id="secret">Webhook signing secret</h2>
        <p>
          Every webhook is signed with this secret (Standard Webhooks: the <code>webhook-id</code>, <code>webhook-timestamp</code> and{' '}
          <code>webhook-signature</code> headers). After a rotation the previous secret signs as well for 24 hours.
        </p>
        {props.secret ? (
          <>
            <label for="secret-value">Signing secret</label>
            <input id="secret-value" class="secret" readonly value={props.secret.secret} />
            <p>
              Created <Time at={props.secret.created_at} now={view.now} />
              {props.secret.previous_secret_expires_at ? <> · the previous secret signs until <Time at={props.secret.previous_secret_expires_at} now={view.now} /></> : ''}
            </p>
          </>
        ) : (
          <ActionButton action={`${HERE}/secret`} csrf={csrf} name="action" value="reveal" label="Reveal secret" />
        )}
        <ActionButton action={`${HERE}/secret`} csrf={csrf} name="action" value="rotate" label="Rotate secret" />
      </section>
      <section aria-labelledby="endpoints">
        <h2 id="endpoints">Webhook endpoints</h2>
        <Table
          caption="Where the lender's events are sent (at most 10)"
          headers={['URL', 'Events', 'Description', 'Created', 'Action']}
          rows={endpoints.map((e) => [
            <code>{e.url}</code>,
            e.event_types.join(', '),
            e.description ?? '',
            <Time at={e.created_at} now={view.now} />,
            <ActionButton action={`${HERE}/endpoints/${encodeURIComponent(e.id)}/delete`} csrf={csrf} label={`Delete ${e.url}`} />,
          ])}
        />
        <form method="post" action={`${HERE}/endpoints`}>
          <Csrf token={csrf} />
          <label for="endpoint-url">Endpoint URL</label>
          <input id="endpoint-url" name="url" type="url" required maxlength={2048} placeholder="https://example.com/hooks" />
          <fieldset>
            <legend>Event types</legend>
            {ENDPOINT_EVENT_TYPES.map((x) => (
              <label>
                <input type="checkbox" name="event_types" value={x} /> {x} <small>({EVENT_HELP[x]})</small>
              </label>
            ))}
          </fieldset>
          <label for="endpoint-description">Description (optional)</label>
          <input id="endpoint-description" name="description" maxlength={200} />
          <button type="submit">Add endpoint</button>
        </form>
      </section>
      <section aria-labelledby="deliveries">
        <h2 id="deliveries">Deliveries</h2>
        <form method="get" action={HERE}>
          <Choice id="delivery-status" name="status" label="State" values={DELIVERY_STATES} any="All states" selected={filter.status} />
          <button type="submit">Filter</button>
        </form>
        <Table
          caption="Webhook deliveries, newest first"
          headers={['Event', 'Target', 'Created', 'State', 'Attempts', 'Last answer', 'Next attempt']}
          rows={deliveries.deliveries.map((d) => [
            <>
              {d.type}
              <br />
              <small>
                <code>{d.id}</code>
              </small>
            </>,
            <code>{d.target_url}</code>,
            <Time at={d.created_at} now={view.now} />,
            d.state,
            String(d.attempts),
            d.last_status_code !== null ? `HTTP ${d.last_status_code}` : (d.last_error ?? '—'),
            <Time at={d.next_attempt_at} now={view.now} />,
          ])}
          empty="No delivery yet."
        />
        <Pager path={HERE} query={{ status: filter.status }} next={deliveries.next_page_token} />
      </section>
    </>
  );
}

export const developerPages = (deps: Deps) => {
  const render = (s: PortalSession, query: Record<string, string | undefined>, extra: { newKey?: string; secret?: Awaited<ReturnType<typeof readSecret>>; message?: Message } = {}, status = 200) => {
    const view = viewOf(deps, s, HERE);
    return page(view, 'Developers', <DevelopersContent deps={deps} s={s} view={view} query={query} {...extra} />, status);
  };
  return new Elysia({ name: 'portal-developers' })
    .use(portalSession(deps))
    .get(HERE, ({ session, query }) => render(session, query), { signedIn: true, detail: { hide: true } })
    .post(
      `${HERE}/keys`,
      async ({ session }) => {
        try {
          const key = await createLenderKey(deps, session.lender.id, deps.clock.now());
          return render(session, {}, { newKey: key, message: { kind: 'ok', text: 'API key created.' } });
        } catch (e) {
          if (!(e instanceof TooManyApiKeys)) throw e;
          return render(session, {}, { message: { kind: 'error', text: `${e.message}. ${e.suggestion}.` } }, 409);
        }
      },
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      `${HERE}/keys/:id/revoke`,
      async ({ session, params }) => {
        const k = (await listKeys(deps, session.lender.id)).find((x) => x.id === params.id && x.revokedAt === null);
        if (!k) throw new NotFound('API key', params.id);
        const view = viewOf(deps, session, HERE);
        return page(
          view,
          'Revoke an API key',
          <Confirm
            question={
              <>
                Revoke <code>{`${k.prefix}…`}</code>? Every request with it is refused (401) from then on; this cannot be undone.
              </>
            }
            action={`${HERE}/keys/${encodeURIComponent(k.id)}/revoke`}
            csrf={view.user.csrf}
            label="Revoke key"
            cancel={HERE}
          />,
        );
      },
      { signedIn: true, detail: { hide: true } },
    )
    .post(
      `${HERE}/keys/:id/revoke`,
      async ({ session, params }) => {
        if (!(await revokeLenderKey(deps, session.lender.id, params.id, deps.clock.now()))) throw new NotFound('API key', params.id);
        return render(session, {}, { message: { kind: 'ok', text: 'API key revoked.' } });
      },
      { signedIn: true, detail: { hide: true } },
    )
    .post(
      `${HERE}/secret`,
      async ({ session, body }) => {
        const ctx = { lender: session.lender, deps };
        const action = (body as Record<string, unknown>).action;
        if (action === 'rotate') {
          const r = await rotateSecret({ ctx });
          return render(session, {}, { secret: r, message: { kind: 'ok', text: 'Secret rotated: the previous one signs as well for 24 hours.' } });
        }
        return render(session, {}, { secret: await readSecret({ ctx }) });
      },
      { signedIn: true, detail: { hide: true } },
    )
    .post(
      `${HERE}/endpoints`,
      async ({ session, body }) => {
        const raw = (body ?? {}) as Record<string, unknown>;
        const types = raw.event_types === undefined ? [] : ([] as unknown[]).concat(raw.event_types);
        try {
          const input = formOf(EndpointForm, {
            url: raw.url,
            event_types: types,
            ...(typeof raw.description === 'string' && raw.description.trim() ? { description: raw.description } : {}),
          });
          const e = await createEndpoint({ ctx: { lender: session.lender, deps }, input });
          return render(session, {}, { message: { kind: 'ok', text: `Endpoint added: ${e.url}` } });
        } catch (e) {
          return render(session, {}, { message: { kind: 'error', text: problemOf(e) } }, 400);
        }
      },
      { signedIn: true, detail: { hide: true } },
    )
    .post(
      `${HERE}/endpoints/:id/delete`,
      async ({ session, params }) => {
        await deleteEndpoint({ ctx: { lender: session.lender, deps }, input: { id: params.id } });
        return render(session, {}, { message: { kind: 'ok', text: 'Endpoint deleted.' } });
      },
      { signedIn: true, detail: { hide: true } },
    );
};
