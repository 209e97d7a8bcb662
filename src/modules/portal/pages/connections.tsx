import { Elysia } from 'elysia';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps';
import { NotFound } from '../../../platform/errors';
import { validated } from '../../../platform/validation';
import { CreateConnectionBody, UpdateConnectionBody } from '../../payment-connections/model';
import { createConnection, deleteConnection, listConnections, updateConnection } from '../../payment-connections/service';
import { formOf, page, portalSession, problemOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { ActionButton, Confirm, Csrf, Notice, Table, Time, type Message } from '../ui/components';
import { count } from '../ui/format';

// /portal/payments/connections: the lender's processor keys (GET/POST/PATCH/DELETE /v1/payment_connections):
// add, promote, demote, relabel, replace and delete after a confirmation. Forms are checked against the
// API's own schemas, so the portal and the API refuse the same things.

const HERE = '/portal/payments/connections';
const RAILS = { ach: 'ACH', card: 'Card', both: 'Both' } as const;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);

const toCreate = (body: Record<string, unknown>) =>
  validated(CreateConnectionBody, {
    api_key: str(body.api_key),
    rail_scope: str(body.rail_scope),
    ...(body.is_default === 'true' ? { is_default: true } : {}),
    ...(str(body.merchant_ref) ? { merchant_ref: str(body.merchant_ref) } : {}),
    ...(str(body.label) ? { label: str(body.label) } : {}),
  });
const toChange = (body: Record<string, unknown>) => validated(UpdateConnectionBody, body);

/** A key's row form: which action, and its one field. */
const KeyAction = Type.Object({
  action: Type.Union(['promote', 'demote', 'label', 'replace', 'delete'].map((a) => Type.Literal(a)), { description: 'the action of the form' }),
  label: Type.Optional(Type.String({ maxLength: 1024 })),
  api_key: Type.Optional(Type.String({ maxLength: 1024 })),
});

export const connectionPages = (deps: Deps) => {
  const ctxOf = (s: PortalSession) => ({ lender: s.lender, deps });
  const render = async (s: PortalSession, message: Message = null, status = 200) => {
    const view = viewOf(deps, s, HERE);
    const csrf = view.user.csrf;
    const list = await listConnections({ ctx: ctxOf(s) });
    const rows = list.connections.map((k) => {
      const at = `${HERE}/${encodeURIComponent(k.id)}`;
      return [
        k.label,
        k.processor,
        RAILS[k.rail_scope as keyof typeof RAILS] ?? k.rail_scope,
        k.is_default ? 'Default' : k.merchant_ref ? `Tag ${k.merchant_ref}` : 'Unused',
        `…${k.key_last4 ?? ''}`,
        k.last_poll_at ? <Time at={k.last_poll_at} now={view.now} /> : 'never',
        k.last_poll_error ?? '',
        <>
          {!k.is_default && !k.merchant_ref && <ActionButton action={at} csrf={csrf} name="action" value="promote" label={`Promote ${k.label}`} />}
          {k.is_default && <ActionButton action={at} csrf={csrf} name="action" value="demote" label={`Demote ${k.label}`} />}
          <form method="post" action={at}>
            <Csrf token={csrf} />
            <input type="hidden" name="action" value="label" />
            <label>
              {`New label for ${k.label} `}
              <input name="label" value={k.label} maxlength={80} required />
            </label>
            <button type="submit">Save label</button>
          </form>
          <form method="post" action={at}>
            <Csrf token={csrf} />
            <input type="hidden" name="action" value="replace" />
            <label>
              {`New API key for ${k.label} `}
              <input name="api_key" type="password" autocomplete="off" required />
            </label>
            <button type="submit">Replace key</button>
          </form>
          <a href={`${at}/delete`}>{`Delete ${k.label}`}</a>
        </>,
      ];
    });
    const missing = list.missing_default_rails.length
      ? `No default key for ${list.missing_default_rails.join(' and ')}: borrowers enrolled without a merchant ref are skipped for those payment types.`
      : null;
    return page(
      view,
      'Processor keys',
      [
        <Notice message={message} />,
        <Notice message={missing ? { kind: 'error', text: missing } : null} />,
        <p>
          {`Payments read through these keys: ${count(list.ingested)}; matched to a borrower: ${count(list.matched)}. Last read: `}
          {list.last_poll_at ? <Time at={list.last_poll_at} now={view.now} /> : 'never'}.
        </p>,
        <Table caption="Processor keys, defaults first" headers={['Label', 'Processor', 'Rail scope', 'Role', 'Key', 'Last poll', 'Poll error', 'Actions']} rows={rows} />,
        <h2>Add a key</h2>,
        <form method="post" action={HERE}>
          <Csrf token={csrf} />
          <label for="api_key">API key</label>
          <input id="api_key" name="api_key" type="password" autocomplete="off" required />
          <label for="rail_scope">Rail scope</label>
          <select id="rail_scope" name="rail_scope" required>
            {Object.entries(RAILS).map(([v, label]) => (
              <option value={v}>{label}</option>
            ))}
          </select>
          <label for="is_default">
            <input id="is_default" name="is_default" type="checkbox" value="true" /> Default key
          </label>
          <label for="merchant_ref">Merchant ref</label>
          <input id="merchant_ref" name="merchant_ref" pattern="[a-z0-9_-]{1,64}" />
          <label for="label">Label</label>
          <input id="label" name="label" maxlength={80} />
          <button type="submit">Add key</button>
        </form>,
        <h2>Payments you create at your processor</h2>,
        <p>
          Give a payment you create at your processor yourself the reference <code>{'DRS-{authorizer_id}-{your_payment_id}'}</code> (in Stripe, the metadata{' '}
          <code>drs_reference</code> or the description). The service then matches its results to the borrower enrolled with that authorizer_id.
        </p>,
      ],
      status,
    );
  };

  return new Elysia({ name: 'portal-connections' })
    .use(portalSession(deps))
    .get(HERE, ({ session }) => render(session), { signedIn: true, detail: { hide: true } })
    .post(
      HERE,
      async ({ session, body }) => {
        try {
          const k = await createConnection({ ctx: ctxOf(session), input: { body: toCreate((body ?? {}) as Record<string, unknown>) } });
          return render(session, { kind: 'ok', text: `Added ${k.label}.` });
        } catch (e) {
          return render(session, { kind: 'error', text: problemOf(e) }, 400);
        }
      },
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      `${HERE}/:id/delete`,
      async ({ session, params }) => {
        const k = (await listConnections({ ctx: ctxOf(session) })).connections.find((x) => x.id === params.id);
        if (!k) throw new NotFound('Processor key', params.id);
        const view = viewOf(deps, session, HERE);
        return page(
          view,
          'Delete a processor key',
          <Confirm
            question={
              <>
                Delete <strong>{k.label}</strong> {`(key ending ${k.key_last4 ?? ''})? The key is erased; payments already read through it are kept.`}
              </>
            }
            action={`${HERE}/${encodeURIComponent(k.id)}`}
            csrf={view.user.csrf}
            name="action"
            value="delete"
            label="Delete key"
            cancel={HERE}
          />,
        );
      },
      { signedIn: true, detail: { hide: true } },
    )
    .post(
      `${HERE}/:id`,
      async ({ session, params, body }) => {
        const ctx = ctxOf(session);
        const id = params.id;
        try {
          const form = formOf(KeyAction, body);
          switch (form.action) {
            case 'promote':
              await updateConnection({ ctx, input: { id, body: toChange({ is_default: true }) } });
              return render(session, { kind: 'ok', text: 'Promoted to default.' });
            case 'demote':
              await updateConnection({ ctx, input: { id, body: toChange({ is_default: false }) } });
              return render(session, { kind: 'ok', text: 'Demoted.' });
            case 'label':
              await updateConnection({ ctx, input: { id, body: toChange({ label: str(form.label) ?? '' }) } });
              return render(session, { kind: 'ok', text: 'Label saved.' });
            case 'replace':
              await updateConnection({ ctx, input: { id, body: toChange({ api_key: str(form.api_key) ?? '' }) } });
              return render(session, { kind: 'ok', text: 'Key replaced.' });
            case 'delete':
              await deleteConnection({ ctx, input: { id } });
              return render(session, { kind: 'ok', text: 'Key deleted.' });
          }
        } catch (e) {
          if (e instanceof NotFound) throw e;
          return render(session, { kind: 'error', text: problemOf(e) }, 400);
        }
      },
      { signedIn: true, detail: { hide: true } },
    );
};
