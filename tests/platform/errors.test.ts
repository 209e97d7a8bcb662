import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../helpers/context';

const ctx = useTestContext();

describe('error envelope', () => {
  test('unknown route is a 404 envelope with a request id', async () => {
    const { status, body, res } = await ctx.json('GET', '/v1/nothing-here');
    expect(status).toBe(404);
    expect(body.status).toBe('error');
    expect(body.status_code).toBe(404);
    expect(body.error.code).toBe('RESOURCE_NOT_FOUND');
    expect(body.error.timestamp).toMatch(/Z$/);
    expect(body.documentation_url).toContain('/docs#');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('wrong method on a known path is 405 with Allow', async () => {
    const { status, body, res } = await ctx.json('POST', '/healthz');
    expect(status).toBe(405);
    expect(body.error.code).toBe('METHOD_NOT_ALLOWED');
    expect(res.headers.get('allow')).toContain('GET');
  });

  test('healthz answers', async () => {
    const { status, body } = await ctx.json('GET', '/healthz', { key: null });
    expect(status).toBe(200);
    expect(body).toEqual({ status: 'ok' });
  });
});

describe('every error code has a section of the docs page', () => {
  test('each code the service answers with is listed, at the anchor its documentation_url names', async () => {
    const { docsPage } = await import('../../src/http/docs');
    const { ERROR_CODES } = await import('../../src/http/error-codes');
    const html = docsPage();
    const codes = ['BAD_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'HTTPS_REQUIRED', 'RESOURCE_NOT_FOUND', 'METHOD_NOT_ALLOWED', 'CONFLICT', 'PAYLOAD_TOO_LARGE', 'URI_TOO_LONG', 'HEADERS_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED', 'INTERNAL_ERROR', 'SERVICE_UNAVAILABLE'];
    expect(Object.keys(ERROR_CODES).sort()).toEqual(codes.sort());
    for (const code of codes) expect(html).toContain(`id="${code.toLowerCase().replace(/_/g, '-')}"`);
    const { body } = await ctx.json('GET', '/v1/nothing-here');
    expect(html).toContain(`id="${new URL(body.documentation_url).hash.slice(1)}"`);
  });
});
