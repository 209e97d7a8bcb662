import type { Child } from 'hono/jsx';
import { dateWords, dollars, relative, showBidiControls } from './format';

// The portal's building blocks, as server-side JSX (hono/jsx): every text and attribute is escaped by the
// renderer, so a page never writes a stored value as markup. Pages use these, the classless stylesheet, and
// no script.

export const NAV: [href: string, label: string][] = [
  ['/portal', 'Overview'],
  ['/portal/balance-checks', 'Balance checks'],
  ['/portal/monitoring', 'Monitoring'],
  ['/portal/payments/borrowers', 'Borrowers'],
  ['/portal/payments/list', 'Payments'],
  ['/portal/payments/bank-accounts', 'Bank accounts'],
  ['/portal/payments/fraud-alerts', 'Fraud alerts'],
  ['/portal/payments/connections', 'Processor keys'],
  ['/portal/payments/bank-data', 'Bank data'],
  ['/portal/payments/results-upload', 'Results upload'],
  ['/portal/payments/rules', 'Collection rules'],
  ['/portal/developers', 'Developers'],
];

/** What every signed-in page knows: who, the CSRF token of the session, the time, and where it is. */
export interface View {
  user: { displayName: string; lender: string; csrf: string };
  now: number;
  current: string;
}

/** A whole page as HTML: the doctype, the rendered tree, and bidi controls in its text made visible. */
/** A page as HTML text; a component may be asynchronous (it awaits a store), so the text is awaited. */
export async function html(tree: Child): Promise<string> {
  const out = tree == null ? '' : String(await (tree as { toString(): string | Promise<string> }).toString());
  return showBidiControls(`<!doctype html>\n${out}`);
}

/** html for a tree with no asynchronous component (an error page, the sign-in form), in the same step. */
export function htmlNow(tree: Child): string {
  const out = String(tree ?? '');
  return showBidiControls(`<!doctype html>\n${out}`);
}

export function Layout(props: { title: string; view?: View; children?: Child }) {
  const v = props.view;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · Debit Recovery`}</title>
        <link rel="icon" href="/portal/assets/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/portal/assets/pico.css" />
        <link rel="stylesheet" href="/portal/assets/portal.css" />
      </head>
      <body>
        <header>
          {v && (
            <nav aria-label="Main">
              <ul>
                <li>
                  <strong>{v.user.lender}</strong>
                </li>
              </ul>
              <ul>
                {NAV.map(([href, label]) => (
                  <li>
                    <a href={href} aria-current={v.current === href ? 'page' : undefined}>
                      {label}
                    </a>
                  </li>
                ))}
                <li>
                  <form method="post" action="/portal/logout" class="sign-out">
                    <Csrf token={v.user.csrf} />
                    <button type="submit" class="quiet">
                      Sign out
                    </button>
                  </form>
                </li>
              </ul>
            </nav>
          )}
        </header>
        <main>
          <h1>{props.title}</h1>
          {props.children}
        </main>
        <footer>
          <small>{v ? `Signed in as ${v.user.displayName}` : 'Debit recovery and balance monitoring'}</small>
        </footer>
      </body>
    </html>
  );
}

export const Csrf = (p: { token: string }) => <input type="hidden" name="_csrf" value={p.token} />;

export type Message = { kind: 'ok' | 'error'; text: string } | null | undefined;

export function Notice({ message }: { message: Message }) {
  if (!message) return null;
  return message.kind === 'error' ? (
    <p role="alert">
      <mark>{message.text}</mark>
    </p>
  ) : (
    <p role="status">
      <ins>{message.text}</ins>
    </p>
  );
}

/** A date in words in UTC, relative as well when within a week; the machine-readable instant in datetime. */
export function Time({ at, now }: { at: number | string | null | undefined; now: number }) {
  if (at === null || at === undefined || at === '') return <span>—</span>;
  const ms = typeof at === 'number' ? at : Date.parse(at);
  if (!Number.isFinite(ms)) return <span>{String(at)}</span>;
  const rel = relative(ms, now);
  return (
    <time datetime={new Date(ms).toISOString()}>
      {dateWords(ms)}
      {rel ? ` (${rel})` : ''}
    </time>
  );
}

export const Money = ({ cents }: { cents: number | null | undefined }) => <>{cents === null || cents === undefined ? '—' : dollars(cents)}</>;

/**
 * A table with a caption, its header cells scoped; "None yet." when it has no row. `phone` names the columns
 * (by index) a phone's width keeps, the ones a reader needs (amount, status, who): the others are marked
 * `wide` and shown from a tablet's width up.
 */
export function Table(props: { caption: string; headers: string[]; rows: Child[][]; empty?: string; phone?: number[] }) {
  if (props.rows.length === 0) return <p>{props.empty ?? 'None yet.'}</p>;
  const wide = (i: number) => (props.phone && !props.phone.includes(i) ? 'wide' : undefined);
  return (
    <figure>
      <table>
        <caption>{props.caption}</caption>
        <thead>
          <tr>
            {props.headers.map((h, i) => (
              <th scope="col" class={wide(i)}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr>
              {r.map((c, i) => (
                <td class={wide(i)}>{c}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}

/** Named values, one row each, the name as the row's header cell. */
export function Facts(props: { caption: string; rows: [name: string, value: Child][] }) {
  return (
    <figure>
      <table>
        <caption>{props.caption}</caption>
        <tbody>
          {props.rows.map(([k, v]) => (
            <tr>
              <th scope="row">{k}</th>
              <td>{v}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}

/**
 * A labelled select of a filter: each option a value (shown as itself, or by `labels`), the current one
 * selected, and first an empty option (no filter) named `any` when given.
 */
export function Choice<V extends string>(props: { id: string; name: string; label: string; values: readonly V[]; labels?: Record<V, string>; any?: string; selected: string | undefined }) {
  return (
    <>
      <label for={props.id}>{props.label}</label>
      <select id={props.id} name={props.name}>
        {props.any !== undefined && <option value="">{props.any}</option>}
        {props.values.map((v) => (
          <option value={v} selected={props.selected === v}>
            {props.labels?.[v] ?? v}
          </option>
        ))}
      </select>
    </>
  );
}

/** A link to the next page of a keyset listing, keeping the filters. */
export function Pager(props: { path: string; query: Record<string, string | undefined>; next: string | null }) {
  if (!props.next) return null;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(props.query)) if (v) q.set(k, v);
  q.set('next_page_token', props.next);
  return (
    <p>
      <a href={`${props.path}?${q.toString()}`}>Next page</a>
    </p>
  );
}

/** A one-button form that posts an action (with the CSRF token). */
export function ActionButton(props: { action: string; csrf: string; name?: string; value?: string; label: string; fields?: Record<string, string> }) {
  return (
    <form method="post" action={props.action}>
      <Csrf token={props.csrf} />
      {props.name && <input type="hidden" name={props.name} value={props.value ?? ''} />}
      {Object.entries(props.fields ?? {}).map(([k, v]) => (
        <input type="hidden" name={k} value={v} />
      ))}
      <button type="submit">{props.label}</button>
    </form>
  );
}

/** A confirmation: the question, the one button that does it (a form with the CSRF token), and a way back. */
export function Confirm(props: { question: Child; action: string; csrf: string; label: string; name?: string; value?: string; cancel: string }) {
  return (
    <>
      <p>{props.question}</p>
      <ActionButton action={props.action} csrf={props.csrf} name={props.name} value={props.value} label={props.label} />
      <p>
        <a href={props.cancel}>Cancel</a>
      </p>
    </>
  );
}
