// Refusals that Bun would otherwise answer itself, bare (no envelope, no request id): a 100 KB header, a
// 23 KB URL, a body over the server's ceiling; and a chunked body (no Content-Length) refused as soon as it
// passes its route's limit, while the client is still sending. Against the real process, whose header
// limit is set at start.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { ServiceHarness, TEST_API_KEY, type ServiceProcess } from '../helpers/server';
import { rawConnect } from '../helpers/raw-http';
import { JSON_LIMIT_BYTES, SERVER_MAX_BODY_BYTES } from '../../src/http/body';
import { MAX_HEADER_BYTES, MAX_URL_BYTES } from '../../src/http/limits';

const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const harness = new ServiceHarness();
let service: ServiceProcess;
let port: number;

beforeAll(async () => {
  service = await harness.start();
  port = Number(new URL(service.url).port);
}, 30_000);
afterAll(() => harness.cleanup());

function expectEnvelope(status: number, headers: Record<string, string> | Headers, body: string, code: string) {
  const get = (name: string) => (headers instanceof Headers ? headers.get(name) : headers[name]);
  expect(get('x-request-id')).toMatch(REQUEST_ID);
  expect(get('content-type')).toContain('application/json');
  const parsed = JSON.parse(body);
  expect(parsed).toMatchObject({ status: 'error', status_code: status, error: { code } });
  expect(parsed.documentation_url).toContain(`#${code.toLowerCase().replace(/_/g, '-')}`);
}

describe('refusals carry the envelope and X-Request-Id', () => {
  test(`a 100 KB header → 431 HEADERS_TOO_LARGE (the service's limit is ${MAX_HEADER_BYTES} bytes)`, async () => {
    const res = await fetch(`${service.url}/v1/monitoring/schedules`, { headers: { authorization: `Bearer ${TEST_API_KEY}`, 'x-padding': 'a'.repeat(100_000) } });
    expect(res.status).toBe(431);
    expectEnvelope(431, res.headers, await res.text(), 'HEADERS_TOO_LARGE');
  });

  test(`a 23 KB URL → 414 URI_TOO_LONG (the service's limit is ${MAX_URL_BYTES} bytes)`, async () => {
    const ids = Array.from({ length: 600 }, () => 'batch_ids=00000000-0000-7000-8000-000000000000').join('&');
    expect(ids.length).toBeGreaterThan(23_000);
    const res = await fetch(`${service.url}/v1/balances/csv?${ids}`, { headers: { authorization: `Bearer ${TEST_API_KEY}` } });
    expect(res.status).toBe(414);
    expectEnvelope(414, res.headers, await res.text(), 'URI_TOO_LONG');
  });

  test('a body declared over the server ceiling → 413 at once, before any of it is read', async () => {
    const conn = await rawConnect(port);
    try {
      await conn.write(
        `POST /v1/balance_requests/csv HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_API_KEY}\r\n` +
          `Content-Type: multipart/form-data; boundary=b\r\nContent-Length: ${SERVER_MAX_BODY_BYTES + 1}\r\n\r\n`,
      );
      // The rest of the body never comes: any answer is one given without it (the wait only ends a hung test).
      const res = await conn.response(20_000);
      expect(res?.status).toBe(413);
      expectEnvelope(413, res!.headers, res!.body, 'PAYLOAD_TOO_LARGE');
      expect(JSON.parse(res!.body).error.details.limit_bytes).toBe(SERVER_MAX_BODY_BYTES);
    } finally {
      conn.close();
    }
  });

  test('a chunked JSON body is refused with 413 as soon as it passes the route limit, while the client is still sending', async () => {
    const conn = await rawConnect(port);
    try {
      await conn.write(
        `POST /v1/balance_requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_API_KEY}\r\n` +
          'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
      );
      const chunk = 'x'.repeat(64 * 1024);
      let sent = 0;
      // Just past the limit, then the client goes quiet without ending the body.
      while (sent <= JSON_LIMIT_BYTES) {
        await conn.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
        sent += chunk.length;
      }
      // The rest of the body never comes: any answer is one given without it (the wait only ends a hung test).
      const res = await conn.response(20_000);
      expect(res?.status).toBe(413);
      expectEnvelope(413, res!.headers, res!.body, 'PAYLOAD_TOO_LARGE');
      expect(JSON.parse(res!.body).error.details.limit_bytes).toBe(JSON_LIMIT_BYTES);
    } finally {
      conn.close();
    }
  });

  test('a chunked body within the limit is read to its end and accepted', async () => {
    const body = JSON.stringify({ authorizers: [{ authorizer_unique_id: 'chunked-1', ssn: '123456789', account_number: '0001234567', routing_number: '110000000' }] });
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        const bytes = new TextEncoder().encode(body);
        c.enqueue(bytes.subarray(0, 40));
        c.enqueue(bytes.subarray(40));
        c.close();
      },
    });
    const res = await fetch(`${service.url}/v1/balance_requests`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_API_KEY}`, 'content-type': 'application/json' },
      body: stream,
    });
    expect(res.status).toBe(201);
  });

  test('the service still answers after each refusal', async () => {
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
  });
});
