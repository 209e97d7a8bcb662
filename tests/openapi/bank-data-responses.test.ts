// Every answer of the bank-data connection routes, read against the OpenAPI document by a validator that is not
// the service's own (ajv, draft 2020-12): a Stripe connection's `environment` is null, which the document's
// enum once left out, so a strict mock or client refused every Stripe connection answer.
import { afterAll, describe, expect, test } from 'bun:test';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { createTestContext } from '../helpers/context';
import { startFakePlaid } from '../fakes/plaid-server';
import { startFakeStripe } from '../fakes/stripe-server';

type Json = Record<string, any>;
const plaid = startFakePlaid();
const stripe = startFakeStripe();
const c = createTestContext({ PLAID_API_URL: plaid.url, STRIPE_API_URL: stripe.url });
afterAll(() => {
  c.close();
  plaid.stop();
  stripe.stop();
});

describe('the bank-data connection routes against the OpenAPI document', () => {
  test('every answer, success and error, is valid against the schema the document gives for its status', async () => {
    const doc = (await (await c.app.handle(new Request('http://localhost/docs/json'))).json()) as Json;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const id = (name: string) => `https://schemas.invalid/${name}`;
    const local = (s: unknown) => JSON.parse(JSON.stringify(s).replace(/"#\/components\/schemas\/([^"]+)"/g, (_, n: string) => `"${id(n)}"`));
    for (const [name, schema] of Object.entries(doc.components.schemas as Json)) ajv.addSchema({ ...local(schema), $id: id(name) });
    const checked: string[] = [];
    const check = async (method: string, path: string, docPath: string, body?: unknown) => {
      const r = await c.json(method, path, body === undefined ? {} : { body });
      const res = doc.paths[docPath]?.[method.toLowerCase()]?.responses?.[String(r.status)];
      expect(res).toBeDefined();
      const schema = res.content?.['application/json']?.schema;
      if (schema) {
        const validate = ajv.compile(local(schema));
        if (!validate(r.body)) throw new Error(`${method} ${path} ${r.status}: ${ajv.errorsText(validate.errors)}`);
      }
      checked.push(`${method} ${docPath} ${r.status}`);
      return r;
    };
    plaid.addClient('client_doc_check', 'secret-doc-check-0001');
    const p = await check('POST', '/v1/bank_data_connections', '/v1/bank_data_connections', { provider: 'plaid', client_id: 'client_doc_check', secret: 'secret-doc-check-0001', environment: 'production' });
    expect(p.status).toBe(201);
    expect((await check('POST', '/v1/bank_data_connections', '/v1/bank_data_connections', { provider: 'stripe', api_key: 'rk_test_doccheck_refused_0001' })).status).toBe(400);
    const s = await check('POST', '/v1/bank_data_connections', '/v1/bank_data_connections', { provider: 'stripe', api_key: 'rk_test_doccheck00000000000001' });
    expect(s.status).toBe(201);
    expect(s.body.environment).toBeNull();
    expect((await check('GET', '/v1/bank_data_connections', '/v1/bank_data_connections')).body.connections).toHaveLength(2);
    // One connection per provider: a second is a 409.
    expect((await check('POST', '/v1/bank_data_connections', '/v1/bank_data_connections', { provider: 'stripe', api_key: 'rk_test_doccheck00000000000002' })).status).toBe(409);
    expect((await check('POST', '/v1/bank_data_connections', '/v1/bank_data_connections', { provider: 'plaid' })).status).toBe(400);
    expect((await check('DELETE', `/v1/bank_data_connections/${s.body.id}`, '/v1/bank_data_connections/{id}')).status).toBe(204);
    expect((await check('DELETE', `/v1/bank_data_connections/${s.body.id}`, '/v1/bank_data_connections/{id}')).status).toBe(404);
    expect(checked.length).toBe(8);
  });
});
