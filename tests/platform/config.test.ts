import { describe, expect, test } from 'bun:test';
import { ConfigError, loadConfig } from '../../src/config';

const VALID_KEY = 'drs_live_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6';
const VAULT_KEY = Buffer.alloc(32, 7).toString('base64');

describe('REPLICA_ID', () => {
  test('each process gets its own by default; a set one is kept; one with other characters is refused', () => {
    expect(loadConfig({}).replicaId).not.toBe(loadConfig({}).replicaId);
    expect(loadConfig({ REPLICA_ID: 'api-1' }).replicaId).toBe('api-1');
    expect(() => loadConfig({ REPLICA_ID: 'a b' })).toThrow(ConfigError);
    expect(() => loadConfig({ REPLICA_ID: 'x'.repeat(65) })).toThrow(ConfigError);
  });
});

describe('loadConfig defaults (decisions.md, Configuration)', () => {
  test('an empty environment gives exactly the documented defaults', () => {
    expect(loadConfig({})).toEqual({
      port: 3000,
      host: '127.0.0.1',
      databasePath: './db/data/service.sqlite',
      databaseUrl: null,
      databasePoolMax: 10,
      replicaId: expect.stringMatching(/^[0-9A-Za-z._-]+-[0-9a-f]{8}$/),
      tlsCertFile: null,
      tlsKeyFile: null,
      trustProxy: [],
      allowInsecureHttp: false,
      vaultKey: null,
      vaultOldKeys: [],
      vaultKeyFile: './db/data/vault.key',
      bootstrapApiKey: null,
      bankDataProvider: 'sandbox',
      bankDataUrl: null,
      bankDataToken: null,
      routingDirectoryFile: null,
      webhookAllowPrivateTargets: false,
      webhookRetryBaseMs: 60_000,
      webhookMaxAgeMs: 1_800_000,
      webhookTimeoutMs: 10_000,
      rateLimitPerSecond: 20,
      rateLimitBurst: 100,
      balanceConcurrency: 16,
      maxPendingAuthorizersPerLender: 50_000,
      uploadWaitingPerLender: 2,
      uploadMaxRows: 250_000,
      uploadTimeLimitMs: 30_000,
      shutdownGraceMs: 8_000,
      sandboxLatencyMs: 0,
      metricsToken: null,
      publicBaseUrl: null,
      logLevel: 'info',
      processorPollIntervalMs: 60_000,
      monitorReadIntervalMs: 14_400_000,
      monitorQuietReadIntervalMs: 259_200_000,
      collectionMarginCents: 0,
      sandboxSettlementMs: 60_000,
      sandboxProcessorLatencyMs: 0,
      sandboxProcessorLatencyJitterMs: 0,
      processorIdempotencyHorizonMs: 82_800_000,
      processorReconcileIntervalMs: 86_400_000,
      returnRateCheckIntervalMs: 3_600_000,
      sandboxIdempotencyTtlMs: 86_400_000,
      sandboxOutageMs: 60_000,
      sandboxEventRetentionMs: 2_592_000_000,
      stripeApiUrl: null,
      plaidApiUrl: null,
      bankLinkConcurrency: 4,
      bankLinkMinReadIntervalMs: 60_000,
      bankLinkProbeIntervalMs: 3_600_000,
      providerTimeScale: 1,
    });
  });

  test('payment intervals accept values down to 100 ms and no lower', () => {
    expect(loadConfig({ PROCESSOR_POLL_INTERVAL_MS: '100', MONITOR_READ_INTERVAL_MS: '100' })).toMatchObject({
      processorPollIntervalMs: 100,
      monitorReadIntervalMs: 100,
    });
    expect(() => loadConfig({ PROCESSOR_POLL_INTERVAL_MS: '99' })).toThrow(/PROCESSOR_POLL_INTERVAL_MS/);
    expect(() => loadConfig({ STRIPE_API_URL: 'not a url' })).toThrow(/STRIPE_API_URL/);
  });

  test('a linked account’s read window accepts a second to a day, and no less', () => {
    expect(loadConfig({ BANK_LINK_MIN_READ_INTERVAL_MS: '1000' }).bankLinkMinReadIntervalMs).toBe(1_000);
    expect(loadConfig({ BANK_LINK_MIN_READ_INTERVAL_MS: '86400000' }).bankLinkMinReadIntervalMs).toBe(86_400_000);
    expect(loadConfig({ PROVIDER_TIME_SCALE: '0.01' }).providerTimeScale).toBe(0.01);
    expect(() => loadConfig({ PROVIDER_TIME_SCALE: '2' })).toThrow('PROVIDER_TIME_SCALE');
    expect(() => loadConfig({ PROVIDER_TIME_SCALE: '0.001' })).toThrow('PROVIDER_TIME_SCALE');
    expect(() => loadConfig({ BANK_LINK_MIN_READ_INTERVAL_MS: '999' })).toThrow(/BANK_LINK_MIN_READ_INTERVAL_MS/);
  });

  test('empty strings count as unset', () => {
    const { replicaId: _, ...rest } = loadConfig({ PORT: '', TRUST_PROXY: '', BANK_DATA_PROVIDER: '', LOG_LEVEL: '', VAULT_KEY: '', REPLICA_ID: '' });
    const { replicaId: __, ...defaults } = loadConfig({});
    expect(rest).toEqual(defaults);
  });

  test('does not read process.env when an environment is passed', () => {
    const before = process.env.PORT;
    process.env.PORT = '4321';
    try {
      expect(loadConfig({}).port).toBe(3000);
    } finally {
      if (before === undefined) delete process.env.PORT;
      else process.env.PORT = before;
    }
  });
});

describe('loadConfig accepts good values', () => {
  test('every variable set', () => {
    const c = loadConfig({
      PORT: '8443',
      HOST: '127.0.0.1',
      DATABASE_PATH: '/data/x.sqlite',
      TLS_CERT_FILE: '/tls/cert.pem',
      TLS_KEY_FILE: '/tls/key.pem',
      TRUST_PROXY: 'loopback, 10.0.0.0/8,2001:DB8::1',
      ALLOW_INSECURE_HTTP: 'yes',
      VAULT_KEY: VAULT_KEY,
      VAULT_KEY_FILE: '/data/vault.key',
      BOOTSTRAP_API_KEY: VALID_KEY,
      BANK_DATA_PROVIDER: 'http',
      BANK_DATA_URL: 'https://bank.example/api/',
      BANK_DATA_TOKEN: 'tok',
      ROUTING_DIRECTORY_FILE: '/data/fedach.txt',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
      WEBHOOK_RETRY_BASE_MS: '10',
      WEBHOOK_MAX_AGE_MS: '1000',
      RATE_LIMIT_PER_SECOND: '5',
      RATE_LIMIT_BURST: '7',
      BALANCE_CONCURRENCY: '4',
      SANDBOX_LATENCY_MS: '25',
      METRICS_TOKEN: 'm-token',
      PUBLIC_BASE_URL: 'https://drs.example.com/',
      LOG_LEVEL: 'debug',
    });
    expect(c).toMatchObject({
      port: 8443,
      host: '127.0.0.1',
      trustProxy: ['loopback', '10.0.0.0/8', '2001:db8::1'],
      allowInsecureHttp: true,
      vaultKey: VAULT_KEY,
      bootstrapApiKey: VALID_KEY,
      bankDataProvider: 'http',
      bankDataUrl: 'https://bank.example/api',
      webhookAllowPrivateTargets: true,
      webhookRetryBaseMs: 10,
      rateLimitPerSecond: 5,
      rateLimitBurst: 7,
      balanceConcurrency: 4,
      sandboxLatencyMs: 25,
      metricsToken: 'm-token',
      publicBaseUrl: 'https://drs.example.com',
      logLevel: 'debug',
    });
  });

  test('booleans: true/1/yes and false/0/no, any case', () => {
    for (const v of ['true', 'TRUE', '1', 'yes', 'Yes']) expect(loadConfig({ ALLOW_INSECURE_HTTP: v }).allowInsecureHttp).toBe(true);
    for (const v of ['false', 'False', '0', 'no', 'NO']) expect(loadConfig({ ALLOW_INSECURE_HTTP: v }).allowInsecureHttp).toBe(false);
  });

  test('TRUST_PROXY: false trusts none; a list of addresses, CIDR ranges and loopback trusts those', () => {
    for (const v of ['false', 'no', '0']) expect(loadConfig({ TRUST_PROXY: v }).trustProxy).toEqual([]);
    expect(loadConfig({ TRUST_PROXY: '172.17.0.1' }).trustProxy).toEqual(['172.17.0.1']);
    expect(loadConfig({ TRUST_PROXY: 'loopback,fd00::/8 , 192.168.0.0/16' }).trustProxy).toEqual(['loopback', 'fd00::/8', '192.168.0.0/16']);
  });

  test('PORT 0 (any free port) and 65535 are accepted', () => {
    expect(loadConfig({ PORT: '0' }).port).toBe(0);
    expect(loadConfig({ PORT: '65535' }).port).toBe(65535);
  });
});

/** Runs loadConfig and returns the ConfigError it must throw. */
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig refuses bad values, naming the variable', () => {
  const cases: [string, Record<string, string>, string][] = [
    ['PORT=abc', { PORT: 'abc' }, 'PORT'],
    ['PORT=70000', { PORT: '70000' }, 'PORT'],
    ['PORT=-1', { PORT: '-1' }, 'PORT'],
    ['PORT=80.5', { PORT: '80.5' }, 'PORT'],
    ['TRUST_PROXY=maybe', { TRUST_PROXY: 'maybe' }, 'TRUST_PROXY'],
    ['TRUST_PROXY=true (trusts every client)', { TRUST_PROXY: 'true' }, 'TRUST_PROXY'],
    ['TRUST_PROXY with a bad prefix', { TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY'],
    ['TRUST_PROXY with a host name', { TRUST_PROXY: 'proxy.internal' }, 'TRUST_PROXY'],
    ['ALLOW_INSECURE_HTTP=sure', { ALLOW_INSECURE_HTTP: 'sure' }, 'ALLOW_INSECURE_HTTP'],
    ['WEBHOOK_ALLOW_PRIVATE_TARGETS=on', { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on' }, 'WEBHOOK_ALLOW_PRIVATE_TARGETS'],
    ['BANK_DATA_PROVIDER=ftp', { BANK_DATA_PROVIDER: 'ftp' }, 'BANK_DATA_PROVIDER'],
    ['BANK_DATA_PROVIDER=http without BANK_DATA_URL', { BANK_DATA_PROVIDER: 'http' }, 'BANK_DATA_URL'],
    ['BANK_DATA_URL not a URL', { BANK_DATA_URL: 'bank.example' }, 'BANK_DATA_URL'],
    ['BANK_DATA_URL ftp scheme', { BANK_DATA_URL: 'ftp://bank.example' }, 'BANK_DATA_URL'],
    ['VAULT_KEY 16 bytes', { VAULT_KEY: Buffer.alloc(16, 1).toString('base64') }, 'VAULT_KEY'],
    ['VAULT_KEY 33 bytes', { VAULT_KEY: Buffer.alloc(33, 1).toString('base64') }, 'VAULT_KEY'],
    ['VAULT_KEY not base64', { VAULT_KEY: '!'.repeat(44) }, 'VAULT_KEY'],
    ['BOOTSTRAP_API_KEY malformed', { BOOTSTRAP_API_KEY: 'drs_live_short' }, 'BOOTSTRAP_API_KEY'],
    ['BOOTSTRAP_API_KEY wrong prefix', { BOOTSTRAP_API_KEY: 'drs_test_' + 'a'.repeat(32) }, 'BOOTSTRAP_API_KEY'],
    ['WEBHOOK_RETRY_BASE_MS=0', { WEBHOOK_RETRY_BASE_MS: '0' }, 'WEBHOOK_RETRY_BASE_MS'],
    ['WEBHOOK_MAX_AGE_MS=0', { WEBHOOK_MAX_AGE_MS: '0' }, 'WEBHOOK_MAX_AGE_MS'],
    ['RATE_LIMIT_PER_SECOND=0', { RATE_LIMIT_PER_SECOND: '0' }, 'RATE_LIMIT_PER_SECOND'],
    ['RATE_LIMIT_BURST=x', { RATE_LIMIT_BURST: 'x' }, 'RATE_LIMIT_BURST'],
    ['BALANCE_CONCURRENCY=0', { BALANCE_CONCURRENCY: '0' }, 'BALANCE_CONCURRENCY'],
    ['BANK_LINK_MIN_READ_INTERVAL_MS=0', { BANK_LINK_MIN_READ_INTERVAL_MS: '0' }, 'BANK_LINK_MIN_READ_INTERVAL_MS'],
    ['BANK_LINK_MIN_READ_INTERVAL_MS=1m', { BANK_LINK_MIN_READ_INTERVAL_MS: '1m' }, 'BANK_LINK_MIN_READ_INTERVAL_MS'],
    ['MAX_PENDING_AUTHORIZERS_PER_LENDER=0', { MAX_PENDING_AUTHORIZERS_PER_LENDER: '0' }, 'MAX_PENDING_AUTHORIZERS_PER_LENDER'],
    ['SHUTDOWN_GRACE_MS=50', { SHUTDOWN_GRACE_MS: '50' }, 'SHUTDOWN_GRACE_MS'],
    ['SANDBOX_LATENCY_MS=-5', { SANDBOX_LATENCY_MS: '-5' }, 'SANDBOX_LATENCY_MS'],
    ['LOG_LEVEL=loud', { LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    ['TLS_CERT_FILE without TLS_KEY_FILE', { TLS_CERT_FILE: '/tls/cert.pem' }, 'TLS_KEY_FILE'],
    ['TLS_KEY_FILE without TLS_CERT_FILE', { TLS_KEY_FILE: '/tls/key.pem' }, 'TLS_CERT_FILE'],
    ['PUBLIC_BASE_URL relative', { PUBLIC_BASE_URL: '/drs' }, 'PUBLIC_BASE_URL'],
    ['HOST with a slash', { HOST: 'evil/host' }, 'HOST'],
  ];

  for (const [label, env, variable] of cases) {
    test(label, () => {
      const e = configError(env);
      expect(e.name).toBe('ConfigError');
      expect(e.variable).toBe(variable);
      expect(e.message).toContain(variable);
      expect(e.message.split('\n')).toHaveLength(1);
    });
  }

  test('secret values never appear in the message', () => {
    const badVault = Buffer.alloc(31, 9).toString('base64');
    expect(configError({ VAULT_KEY: badVault }).message).not.toContain(badVault);
    const badKey = 'drs_live_' + 'S3cr3t'.repeat(5);
    expect(configError({ BOOTSTRAP_API_KEY: badKey }).message).not.toContain('S3cr3t');
  });
});
