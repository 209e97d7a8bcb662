import { ERROR_CODES } from './error-codes';
import { Elysia } from 'elysia';
import { openapi } from '@elysiajs/openapi';
import { join } from 'node:path';
import { NotFound } from '../platform/errors';
import { restoreFormats } from './formats';

// The OpenAPI document (/docs/json) and the Swagger UI page (/docs), whose assets the service serves itself
// so the page works with no internet.

restoreFormats();

export const API_VERSION = '0.3.0-alpha';
export const GENERATED_SPEC_PATH = '/docs/generated.json';

const SWAGGER_DIR = join(import.meta.dir, '../../node_modules/swagger-ui-dist');
const DOC_ASSETS: Record<string, string> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
};

const DESCRIPTION = `Self-hosted debit recovery and balance monitoring.

A lender (the caller) checks its borrowers' (authorizers') bank balances in batches, monitors balances on
schedules with webhooks, and receives signed webhook notifications.

**Authentication**: every \`/v1\` path needs \`Authorization: Bearer <API_KEY>\`. Keys are issued by the operator
CLI (\`bun run cli key create LENDER\`) or by a dashboard user in the portal (\`/portal/developers\`, "API keys":
create, shown once, and revoke). An address that keeps sending invalid keys (20, then more than one a
second) gets 429 for every \`/v1\` request until its budget refills.

**Sandbox test values** (the default bank data and processor, deterministic): routing \`110000000\` is a supported
bank (\`110000013\` answers 3310, \`110000026\` 3300, \`110000039\` reads but its accounts count as not validated); an account number's last 7 digits are the balance in cents
(\`0001234567\` reads $12,345.67); \`9999CCCC\` answers status code CCCC with no balance; \`9998…\` fails every read
(retried, then 9000). A sandbox payment's outcome is picked by the cents of the amount: 00–90 settle, 91 R01,
92 R09, 93 R02, 94 R10, 95 a late R10, 96 invalid, 97 never resolves, 98 fails once then settles, 99 a late R01
(\`bun run cli sandbox charge\` creates one as your processor would).

**Money**: amounts in enrollments (\`collectable_amount\`), payment events and payments (\`amount\`) and the ledger
are integer cents, whatever their name (only \`last_read.balance_cents\` says so); balances, thresholds and the
results CSVs are dollars with two decimals. Which field is which: the Money table of docs/api.md.

**Webhook URLs** (a batch's \`webhook_url\`, a schedule's \`webhook\`, an endpoint's \`url\`): absolute \`https\` URLs without a user or password,
whose host is and resolves to public addresses only (no loopback, private, link-local or reserved ranges,
checked again at each delivery); a URL that breaks a rule is a 400 saying which. An operator running on a closed
network may allow \`http\` and private or loopback targets with \`WEBHOOK_ALLOW_PRIVATE_TARGETS=true\`.

**Limits**: path and query 8 KB (414), headers 32 KB together (431), JSON bodies 2 MB (413) nested at most 32
levels (400), metadata at most 50 keys an authorizer and 200 distinct keys an export (400); a lender may have
at most 50,000 authorizers waiting to be checked by default (429 with \`Retry-After\`).

**Errors** use one envelope (schema \`ErrorEnvelope\`): \`status\`, \`status_code\`, \`error {code, message, details,
timestamp, suggestion}\`, \`documentation_url\`. Codes: BAD_REQUEST 400 (validation; \`details.errors\` lists
\`{path, message}\`), UNAUTHORIZED 401, FORBIDDEN 403, HTTPS_REQUIRED 403, RESOURCE_NOT_FOUND 404,
METHOD_NOT_ALLOWED 405, CONFLICT 409, PAYLOAD_TOO_LARGE 413, URI_TOO_LONG 414, UNSUPPORTED_MEDIA_TYPE 415,
HEADERS_TOO_LARGE 431, RATE_LIMITED 429
(with \`Retry-After\`), INTERNAL_ERROR 500 (with the request id), SERVICE_UNAVAILABLE 503 (with \`Retry-After\`: the
database, or a processor the route calls, cannot be reached just now; send the request again). Every response
carries \`X-Request-Id\`.`;

/** The OpenAPI document and the page; registered first, so the document sees every route. */
export function docsPlugin(docsBase: string) {
  return openapi({
        path: '/docs',
        // The generator's document; /docs/json serves it polished (http/openapi-document.ts).
        specPath: GENERATED_SPEC_PATH,
        // The page is the service's own (docsAssetRoutes): Swagger UI plus a section per error code.
        provider: null,
        exclude: { paths: ['/docs/assets/*', '/docs/json'] },
        documentation: {
          openapi: '3.1.0',
          info: { title: 'Debit Recovery and Balance Monitoring Service', version: API_VERSION, description: DESCRIPTION },
          servers: [{ url: docsBase }],
          tags: [
            { name: 'Balance checks', description: 'On-demand balance checks in batches (JSON or CSV), results and export' },
            { name: 'Monitoring', description: 'Scheduled balance monitoring and authorizer history' },
            { name: 'Webhooks', description: 'Signing secret and delivery log of the webhooks the service sends' },
            { name: 'Payments', description: 'Processor keys, borrower enrollment and payment results (Early Access)' },
            { name: 'Fraud monitoring', description: 'The fraud-monitoring policy, its alerts and their dispositions, the yearly reviews and report (Early Access)' },
            { name: 'Operations', description: 'Health, readiness and metrics' },
          ],
          components: {
            securitySchemes: {
              bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key: drs_live_ followed by 32 characters' },
            },
          },
        },
      });
}

const anchor = (code: string) => code.toLowerCase().replace(/_/g, '-');
const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The docs page: Swagger UI on the service's own assets, then the error codes, each at its own anchor. */
export function docsPage(): string {
  const errors = Object.entries(ERROR_CODES)
    .map(([code, { status, meaning }]) => `<section id="${anchor(code)}"><h3>${code} <small>${status}</small></h3><p>${escape(meaning)}</p></section>`)
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Debit Recovery and Balance Monitoring Service: API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<style>main.errors{max-width:1460px;margin:0 auto;padding:0 20px 48px;font-family:sans-serif}main.errors section{padding-top:12px}main.errors h3{margin:8px 0 4px}main.errors small{color:#555;font-weight:normal}</style>
</head>
<body>
<div id="swagger-ui"></div>
<main class="errors" aria-label="Error codes"><h2 id="errors">Error codes</h2>
<p>Every error has the same envelope: status, status_code, error {code, message, details, timestamp, suggestion} and documentation_url, which links to the code's section below.</p>
${errors}
</main>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({
  url: '/docs/json',
  dom_id: '#swagger-ui',
  validatorUrl: null,
  onComplete: function () {
    // Swagger UI fills the page after load: open the section the link asked for once it has.
    var target = location.hash && document.getElementById(location.hash.slice(1));
    if (target) target.scrollIntoView();
  },
});
</script>
</body>
</html>`;
}

/** The page, its script and stylesheet (from the installed swagger-ui-dist). */
export function docsAssetRoutes() {
  const page = () => new Response(docsPage(), { headers: { 'content-type': 'text/html; charset=utf-8' } });
  return new Elysia({ name: 'docs-assets' })
    .get('/docs', page, { detail: { hide: true } })
    .get('/docs/', page, { detail: { hide: true } })
    .get(
      '/docs/assets/:file',
      ({ params }) => {
        const type = DOC_ASSETS[params.file];
        if (!type) throw new NotFound('Documentation asset', params.file);
        return new Response(Bun.file(join(SWAGGER_DIR, params.file)), {
          headers: { 'content-type': type, 'cache-control': 'public, max-age=86400' },
        });
      },
      { detail: { hide: true } },
    );
}
