// The portal's HTML, server-rendered: plain forms (no script), Pico's classless stylesheet served by the
// service. Every value is escaped; every form that changes something carries the session's CSRF token.

export const esc = (v: unknown): string =>
  String(v ?? '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

import { NAV } from './ui/components';

export const csrfField = (csrf: string) => `<input type="hidden" name="_csrf" value="${esc(csrf)}">`;

export function page(opts: { title: string; body: string; user?: { displayName: string; lender: string; csrf: string }; current?: string }): string {
  const nav = opts.user
    ? `<nav aria-label="Main"><ul><li><strong>${esc(opts.user.lender)}</strong></li></ul><ul>${NAV.map(
        ([href, label]) => `<li><a href="${href}"${opts.current === href ? ' aria-current="page"' : ''}>${esc(label)}</a></li>`,
      ).join('')}<li><form method="post" action="/portal/logout">${csrfField(opts.user.csrf)}<button type="submit">Sign out</button></form></li></ul></nav>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(opts.title)} · Debit Recovery</title>
<link rel="stylesheet" href="/portal/assets/pico.css">
<link rel="stylesheet" href="/portal/assets/portal.css">
</head>
<body>
<header>${nav}</header>
<main>
<h1>${esc(opts.title)}</h1>
${opts.body}
</main>
<footer><small>${opts.user ? `Signed in as ${esc(opts.user.displayName)}` : 'Debit recovery and balance monitoring'}</small></footer>
</body>
</html>`;
}

export const notice = (kind: 'error' | 'ok', text: string | null | undefined) =>
  text ? `<p role="${kind === 'error' ? 'alert' : 'status'}"><${kind === 'error' ? 'mark' : 'ins'}>${esc(text)}</${kind === 'error' ? 'mark' : 'ins'}></p>` : '';

export function table(headers: string[], rows: string[][], caption: string): string {
  if (rows.length === 0) return `<p>None yet.</p>`;
  return `<figure><table><caption>${esc(caption)}</caption><thead><tr>${headers.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`)
    .join('')}</tbody></table></figure>`;
}

/** A table of named values (one row each, the name as its header cell); the values are escaped. */
export const facts = (caption: string, rows: [name: string, value: unknown][]): string =>
  `<table><caption>${esc(caption)}</caption><tbody>${rows.map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td>${esc(v)}</td></tr>`).join('')}</tbody></table>`;

export function loginPage(opts: { csrf: string; error?: string | null; email?: string }): string {
  return page({
    title: 'Sign in',
    body: `${notice('error', opts.error)}
<form method="post" action="/portal/login">
${csrfField(opts.csrf)}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${esc(opts.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`,
  });
}
