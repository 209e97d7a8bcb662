import { Elysia } from 'elysia';
import { openapi } from '@elysiajs/openapi';
import { join } from 'node:path';
import { NotFound } from '../platform/errors';

// The OpenAPI document (/docs/json) and the Swagger UI page (/docs), whose assets the service serves itself
// so the page works with no internet.

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
CLI (\`bun run cli key create LENDER\`).

**Errors** use one envelope (schema \`ErrorEnvelope\`): \`status\`, \`status_code\`, \`error {code, message, details,
timestamp, suggestion}\`, \`documentation_url\`. Codes: BAD_REQUEST 400 (validation; \`details.errors\` lists
\`{path, message}\`), UNAUTHORIZED 401, FORBIDDEN 403, HTTPS_REQUIRED 403, RESOURCE_NOT_FOUND 404,
METHOD_NOT_ALLOWED 405, CONFLICT 409, PAYLOAD_TOO_LARGE 413, UNSUPPORTED_MEDIA_TYPE 415, RATE_LIMITED 429
(with \`Retry-After\`), INTERNAL_ERROR 500 (with the request id), SERVICE_UNAVAILABLE 503. Every response
carries \`X-Request-Id\`.`;

/** The OpenAPI document and the page; registered first, so the document sees every route. */
export function docsPlugin(docsBase: string) {
  return openapi({
        path: '/docs',
        // The generator's document; /docs/json serves it polished (http/openapi-document.ts).
        specPath: GENERATED_SPEC_PATH,
        provider: 'swagger-ui',
        swagger: {
          cdn: '/docs/assets/swagger-ui-bundle.js',
          theme: '/docs/assets/swagger-ui.css',
          autoDarkMode: false,
          // Absolute, so the page works at /docs/ too (a relative URL would resolve to /docs/docs/json).
          url: '/docs/json',
        } as never,
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

/** The page's script and stylesheet, from the installed swagger-ui-dist. */
export function docsAssetRoutes() {
  return new Elysia({ name: 'docs-assets' }).get(
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
