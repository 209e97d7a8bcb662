import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { API_KEY_PATTERN } from './platform/api-key-format';

// Environment → typed, validated configuration. A bad value stops the start with one line naming the
// variable and what it expects (ConfigError carries that line).

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    expected: string,
    value: string,
    /** The whole message, when the variable is missing rather than wrong. */
    message?: string,
  ) {
    super(message ?? `Invalid configuration: ${variable}=${JSON.stringify(value)}; expected ${expected}`);
    this.name = 'ConfigError';
  }
}

export interface Config {
  port: number;
  host: string;
  databasePath: string;
  /** PostgreSQL instead of the SQLite file when set (postgres://…); DATABASE_PATH is then ignored. */
  databaseUrl: string | null;
  /** Connections of the PostgreSQL pool: each open transaction holds one. */
  databasePoolMax: number;
  /** This process among the replicas on one database: its claims and leases carry it (host name and a random suffix by default). */
  replicaId: string;
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  /** Proxies whose X-Forwarded-For and X-Forwarded-Proto are believed: addresses, CIDR ranges or `loopback`. */
  trustProxy: string[];
  allowInsecureHttp: boolean;
  vaultKey: string | null;
  /** Earlier vault keys (VAULT_OLD_KEYS): values sealed under them still open, nothing new is sealed with them. */
  vaultOldKeys: string[];
  vaultKeyFile: string;
  bootstrapApiKey: string | null;
  bankDataProvider: 'sandbox' | 'http';
  bankDataUrl: string | null;
  bankDataToken: string | null;
  routingDirectoryFile: string | null;
  webhookAllowPrivateTargets: boolean;
  webhookRetryBaseMs: number;
  webhookMaxAgeMs: number;
  webhookTimeoutMs: number;
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  balanceConcurrency: number;
  /** Authorizers a lender may have accepted and not yet checked; past it a new request is 429. */
  maxPendingAuthorizersPerLender: number;
  /** Results uploads of one lender waiting for the upload worker (beside the one it runs); past it a new one is 429. */
  uploadWaitingPerLender: number;
  /** Rows a results file may have (header and blank lines included); past it the file is refused with a row-0 error. */
  uploadMaxRows: number;
  /** How long the upload worker may spend on one file (reading, checking and recording); past it nothing is recorded. */
  uploadTimeLimitMs: number;
  /** How long a stop (SIGTERM, SIGINT) may take before what is still open is cut and the process exits. */
  shutdownGraceMs: number;
  sandboxLatencyMs: number;
  metricsToken: string | null;
  publicBaseUrl: string | null;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  processorPollIntervalMs: number;
  monitorReadIntervalMs: number;
  monitorQuietReadIntervalMs: number;
  collectionMarginCents: number;
  sandboxSettlementMs: number;
  sandboxProcessorLatencyMs: number;
  sandboxProcessorLatencyJitterMs: number;
  processorIdempotencyHorizonMs: number;
  processorReconcileIntervalMs: number;
  /** How often every lender's return rates are evaluated as the window slides (also on every return). */
  returnRateCheckIntervalMs: number;
  sandboxIdempotencyTtlMs: number;
  sandboxOutageMs: number;
  sandboxEventRetentionMs: number;
  stripeApiUrl: string | null;
  /** Where Plaid requests go instead of Plaid's own address for the connection's environment. */
  plaidApiUrl: string | null;
  /** Linked-account reads in flight at once per lender and bank-data provider. */
  bankLinkConcurrency: number;
  /** How long one linked account's answer is reused instead of asking the provider again (per replica). */
  bankLinkMinReadIntervalMs: number;
  /** How soon a link with an open health episode is first probed; each probe that finds it unchanged doubles it, up to a day. */
  bankLinkProbeIntervalMs: number;
  /**
   * Multiplies every provider time the service keeps (Plaid's timeouts and rate window, Stripe's request
   * spacing, the waits on rate limits and pending refreshes): 1 in production; below it only for load tests
   * against fakes whose latencies are scaled the same way.
   */
  providerTimeScale: number;
}

type Env = Record<string, string | undefined>;


function str(env: Env, name: string): string | null {
  const v = env[name];
  return v === undefined || v === '' ? null : v;
}

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const v = str(env, name);
  if (v === null) return def;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new ConfigError(name, `an integer from ${min} to ${max}`, v);
  }
  return Number(v);
}

function fraction(env: Env, name: string, def: number, min: number): number {
  const v = str(env, name);
  if (v === null) return def;
  if (!/^(0|1)?(\.\d+)?$/.test(v) || Number(v) < min || Number(v) > 1) throw new ConfigError(name, `a number from ${min} to 1`, v);
  return Number(v);
}

function bool(env: Env, name: string, def: boolean): boolean {
  const v = str(env, name);
  if (v === null) return def;
  const lower = v.toLowerCase();
  if (['true', '1', 'yes'].includes(lower)) return true;
  if (['false', '0', 'no'].includes(lower)) return false;
  throw new ConfigError(name, 'true or false', v);
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], def: T): T {
  const v = str(env, name);
  if (v === null) return def;
  if (!(values as readonly string[]).includes(v)) throw new ConfigError(name, `one of ${values.join(', ')}`, v);
  return v as T;
}

/**
 * TRUST_PROXY: the proxies whose forwarded headers are believed, as addresses, CIDR ranges and `loopback`,
 * separated by commas. `true` is refused: trusting every peer would let any client name its own address
 * and scheme.
 */
function proxies(env: Env, name: string): string[] {
  const v = str(env, name);
  if (v === null || ['false', '0', 'no'].includes(v.toLowerCase())) return [];
  const expected = 'false, or the proxies to trust as addresses, CIDR ranges or loopback, comma-separated (e.g. loopback,10.0.0.0/8)';
  if (['true', '1', 'yes'].includes(v.toLowerCase())) {
    throw new ConfigError(name, `${expected}; "true" would trust any client's X-Forwarded-* headers, so list the proxy addresses`, v);
  }
  const entries = v.split(',').map((e) => e.trim().toLowerCase()).filter((e) => e !== '');
  for (const e of entries) {
    if (e === 'loopback') continue;
    const [address, prefix, extra] = e.split('/');
    const family = isIP(address ?? '');
    const bits = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !prefixOk || extra !== undefined) throw new ConfigError(name, expected, v);
  }
  if (entries.length === 0) throw new ConfigError(name, expected, v);
  return entries;
}

/**
 * A URL as an error may show it: everything between the scheme and the last `@` (the user and the password,
 * whatever characters the password holds) hidden.
 */
export function withoutCredentials(v: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(v)?.[0] ?? '';
  const at = v.lastIndexOf('@');
  return at < scheme.length ? v : `${scheme}***${v.slice(at)}`;
}

function url(env: Env, name: string): string | null {
  const v = str(env, name);
  if (v === null) return null;
  try {
    const u = new URL(v);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw new ConfigError(name, 'an absolute http(s) URL (percent-encode @, :, / in a user or password: @ is %40)', withoutCredentials(v));
  }
  return v.replace(/\/+$/, '');
}

/**
 * On PostgreSQL the service refuses to start without VAULT_KEY. Several replicas serve one database, and a key
 * file created when missing would be created once per container: each replica would seal with a key of its
 * own, and what one sealed (keys, borrowers' data, held files) the others could not open.
 */
export function requireSharedVaultKey(config: Pick<Config, 'databaseUrl' | 'vaultKey'>): void {
  if (config.databaseUrl === null || config.vaultKey !== null) return;
  throw new ConfigError(
    'VAULT_KEY',
    'a base64 32-byte key',
    '',
    'VAULT_KEY is required when DATABASE_URL names a PostgreSQL database: every replica on the database must seal and open ' +
      'with the same key, and a key file created when missing (VAULT_KEY_FILE) would give each container a key of its own, ' +
      'so that what one seals the others cannot read. Set VAULT_KEY to the same base64 32-byte key on every replica ' +
      '(a new one: openssl rand -base64 32; an existing service: the content of its vault key file).',
  );
}

/** A vault key as configured: 32 bytes in canonical base64 (white space around or inside it ignored). */
const isVaultKey = (text: string): boolean => {
  const raw = Buffer.from(text, 'base64');
  return raw.length === 32 && raw.toString('base64') === text.replace(/\s+/g, '');
};

export function loadConfig(env: Env = process.env): Config {
  const vaultKey = str(env, 'VAULT_KEY');
  if (vaultKey !== null && !isVaultKey(vaultKey)) throw new ConfigError('VAULT_KEY', '32 bytes encoded as base64 (44 characters)', '<hidden>');
  const vaultOldKeys = (str(env, 'VAULT_OLD_KEYS') ?? '').split(/[\s,]+/).filter((k) => k !== '');
  if (!vaultOldKeys.every(isVaultKey)) {
    throw new ConfigError('VAULT_OLD_KEYS', 'base64 32-byte keys (44 characters each), separated by commas', '<hidden>');
  }
  const bootstrapApiKey = str(env, 'BOOTSTRAP_API_KEY');
  if (bootstrapApiKey !== null && !API_KEY_PATTERN.test(bootstrapApiKey)) {
    throw new ConfigError('BOOTSTRAP_API_KEY', 'drs_live_ followed by 32 letters or digits', '<hidden>');
  }
  const tlsCertFile = str(env, 'TLS_CERT_FILE');
  const tlsKeyFile = str(env, 'TLS_KEY_FILE');
  if ((tlsCertFile === null) !== (tlsKeyFile === null)) {
    const missing = tlsCertFile === null ? 'TLS_CERT_FILE' : 'TLS_KEY_FILE';
    throw new ConfigError(missing, 'to be set together with the other TLS file', '');
  }
  const bankDataProvider = oneOf(env, 'BANK_DATA_PROVIDER', ['sandbox', 'http'] as const, 'sandbox');
  const bankDataUrl = url(env, 'BANK_DATA_URL');
  if (bankDataProvider === 'http' && bankDataUrl === null) {
    throw new ConfigError('BANK_DATA_URL', 'a URL when BANK_DATA_PROVIDER=http', '');
  }
  const databaseUrl = str(env, 'DATABASE_URL');
  if (databaseUrl !== null && !/^postgres(ql)?:\/\/[^/]/i.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'a PostgreSQL URL, postgres://user:password@host:5432/database', '(not shown: it may hold a password)');
  }
  const replicaId = str(env, 'REPLICA_ID') ?? `${hostname().slice(0, 40)}-${crypto.randomUUID().slice(0, 8)}`;
  if (!/^[0-9A-Za-z._\-]{1,64}$/.test(replicaId)) throw new ConfigError('REPLICA_ID', 'letters, digits, dots, dashes and underscores, at most 64', replicaId);
  // Loopback unless told otherwise: the image sets HOST=0.0.0.0 itself.
  const host = str(env, 'HOST') ?? '127.0.0.1';
  if (!/^[0-9A-Za-z.:\-\[\]]+$/.test(host)) throw new ConfigError('HOST', 'a host name or IP address', host);

  return {
    port: int(env, 'PORT', 3000, 0, 65535),
    host,
    databasePath: str(env, 'DATABASE_PATH') ?? './db/data/service.sqlite',
    databaseUrl,
    databasePoolMax: int(env, 'DATABASE_POOL_MAX', 10, 2, 1000),
    replicaId,
    tlsCertFile,
    tlsKeyFile,
    trustProxy: proxies(env, 'TRUST_PROXY'),
    allowInsecureHttp: bool(env, 'ALLOW_INSECURE_HTTP', false),
    vaultKey,
    vaultOldKeys,
    vaultKeyFile: str(env, 'VAULT_KEY_FILE') ?? './db/data/vault.key',
    bootstrapApiKey,
    bankDataProvider,
    bankDataUrl,
    bankDataToken: str(env, 'BANK_DATA_TOKEN'),
    routingDirectoryFile: str(env, 'ROUTING_DIRECTORY_FILE'),
    webhookAllowPrivateTargets: bool(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    webhookRetryBaseMs: int(env, 'WEBHOOK_RETRY_BASE_MS', 60_000, 1, 86_400_000),
    webhookMaxAgeMs: int(env, 'WEBHOOK_MAX_AGE_MS', 1_800_000, 1, 7 * 86_400_000),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    rateLimitPerSecond: int(env, 'RATE_LIMIT_PER_SECOND', 20, 1, 1_000_000),
    rateLimitBurst: int(env, 'RATE_LIMIT_BURST', 100, 1, 10_000_000),
    balanceConcurrency: int(env, 'BALANCE_CONCURRENCY', 16, 1, 1024),
    maxPendingAuthorizersPerLender: int(env, 'MAX_PENDING_AUTHORIZERS_PER_LENDER', 50_000, 1, 100_000_000),
    uploadWaitingPerLender: int(env, 'UPLOAD_WAITING_PER_LENDER', 2, 0, 100),
    uploadMaxRows: int(env, 'UPLOAD_MAX_ROWS', 250_000, 1, 10_000_000),
    uploadTimeLimitMs: int(env, 'UPLOAD_TIME_LIMIT_MS', 30_000, 1, 600_000),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 8_000, 100, 600_000),
    sandboxLatencyMs: int(env, 'SANDBOX_LATENCY_MS', 0, 0, 600_000),
    metricsToken: str(env, 'METRICS_TOKEN'),
    publicBaseUrl: url(env, 'PUBLIC_BASE_URL'),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    // Down to 100 ms, so tests and a two-minute demo can run the whole payment cycle quickly.
    processorPollIntervalMs: int(env, 'PROCESSOR_POLL_INTERVAL_MS', 60_000, 100, 86_400_000),
    monitorReadIntervalMs: int(env, 'MONITOR_READ_INTERVAL_MS', 14_400_000, 100, 30 * 86_400_000),
    monitorQuietReadIntervalMs: int(env, 'MONITOR_QUIET_READ_INTERVAL_MS', 3 * 86_400_000, 100, 30 * 86_400_000),
    collectionMarginCents: int(env, 'COLLECTION_MARGIN_CENTS', 0, 0, 1_000_000_000),
    sandboxSettlementMs: int(env, 'SANDBOX_SETTLEMENT_MS', 60_000, 0, 30 * 86_400_000),
    sandboxProcessorLatencyMs: int(env, 'SANDBOX_PROCESSOR_LATENCY_MS', 0, 0, 600_000),
    sandboxProcessorLatencyJitterMs: int(env, 'SANDBOX_PROCESSOR_LATENCY_JITTER_MS', 0, 0, 600_000),
    // Stripe keeps an idempotency key at least 24 hours; past this age a payment whose outcome is unknown is
    // looked up, never sent again with its key (a reused key past Stripe's window is a new payment).
    processorIdempotencyHorizonMs: int(env, 'PROCESSOR_IDEMPOTENCY_HORIZON_MS', 23 * 3_600_000, 100, 23 * 3_600_000),
    processorReconcileIntervalMs: int(env, 'PROCESSOR_RECONCILE_INTERVAL_MS', 86_400_000, 100, 30 * 86_400_000),
    returnRateCheckIntervalMs: int(env, 'RETURN_RATE_CHECK_INTERVAL_MS', 3_600_000, 100, 86_400_000),
    sandboxIdempotencyTtlMs: int(env, 'SANDBOX_IDEMPOTENCY_TTL_MS', 86_400_000, 1, 30 * 86_400_000),
    sandboxOutageMs: int(env, 'SANDBOX_OUTAGE_MS', 60_000, 0, 30 * 86_400_000),
    sandboxEventRetentionMs: int(env, 'SANDBOX_EVENT_RETENTION_MS', 30 * 86_400_000, 1, 365 * 86_400_000),
    stripeApiUrl: url(env, 'STRIPE_API_URL'),
    plaidApiUrl: url(env, 'PLAID_API_URL'),
    bankLinkConcurrency: int(env, 'BANK_LINK_CONCURRENCY', 4, 1, 64),
    // At least a second: the window is what bounds the provider calls of one account, billed to the lender.
    bankLinkMinReadIntervalMs: int(env, 'BANK_LINK_MIN_READ_INTERVAL_MS', 60_000, 1_000, 86_400_000),
    bankLinkProbeIntervalMs: int(env, 'BANK_LINK_PROBE_INTERVAL_MS', 3_600_000, 1_000, 86_400_000),
    providerTimeScale: fraction(env, 'PROVIDER_TIME_SCALE', 1, 0.01),
  };
}

/** The base address used in links (documentation_url), from PUBLIC_BASE_URL or the listen address. */
export function baseUrl(config: Config): string {
  if (config.publicBaseUrl) return config.publicBaseUrl;
  const scheme = config.tlsCertFile ? 'https' : 'http';
  const host = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  return `${scheme}://${host}:${config.port}`;
}
