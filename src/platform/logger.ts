import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

// Keys whose values never reach a log line, wherever they sit in a logged object.
const SENSITIVE_KEYS = [
  'authorization',
  'api_key',
  'apiKey',
  'key',
  'token',
  'secret',
  'ssn',
  'ein',
  'account_number',
  'routing_number',
  'debit_card_number',
  'card_number',
  'cvv',
  'date_of_birth',
  'dob',
  'password',
];

// Values that look like secrets or personal numbers are masked even inside free text such as an error
// message: API keys, webhook secrets, processor keys, and runs of 4+ digits (tax ids, account, routing and
// card numbers, dates of birth).
const TEXT_PATTERNS: [RegExp, string][] = [
  [/\b(drs_live_|whsec_|sk_(?:live|test)_|rk_(?:live|test)_|sbx_)[0-9A-Za-z+/=_-]+/g, '$1[REDACTED]'],
  [/Bearer\s+\S+/gi, 'Bearer [REDACTED]'],
  // Not inside identifiers: a UUID's digit groups follow a letter or a dash.
  [/(?<![0-9A-Za-z_-])\d[\d -]{3,}\d(?![0-9A-Za-z_])/g, '[REDACTED]'],
];

export function scrubText(s: string): string {
  let out = s;
  for (const [re, rep] of TEXT_PATTERNS) out = out.replace(re, rep);
  return out;
}

// Identifiers and measurements we log on purpose.
const SAFE_KEYS = new Set(['reqId', 'request_id', 'batch_id', 'schedule_id', 'delivery_id', 'lender_id', 'route', 'method', 'id']);

const SENSITIVE = new Set(SENSITIVE_KEYS.map((k) => k.toLowerCase()));

function scrubDeep(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return scrubText(v);
  if (v === null || typeof v !== 'object') return v;
  // Deeper than anything we log on purpose: dropped rather than passed through unscrubbed.
  if (depth > 6) return '[Truncated]';
  if (v instanceof Error) return serializeError(v);
  if (Array.isArray(v)) return v.map((x) => scrubDeep(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    out[k] = SAFE_KEYS.has(k) ? x : SENSITIVE.has(k.toLowerCase()) ? '[REDACTED]' : scrubDeep(x, depth + 1);
  }
  return out;
}

/**
 * An error as a log line shows it: its class, message, code, stack and cause, each scrubbed. Nothing else
 * of the object is taken: errors can carry what was sent (a validation error holds the whole body).
 */
export function serializeError(e: Error, depth = 0): Record<string, unknown> {
  const ctorName = (e as { constructor?: { name?: unknown } }).constructor?.name;
  const out: Record<string, unknown> = {
    // The name when it says more than "Error" (SQLiteError sets only its name), else the class.
    type: e.name && e.name !== 'Error' ? e.name : typeof ctorName === 'string' && ctorName !== '' && ctorName !== 'Object' ? ctorName : 'Error',
    message: scrubText(String(e.message)),
  };
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') out.code = code;
  if (typeof e.stack === 'string') out.stack = scrubText(e.stack);
  const cause = (e as { cause?: unknown }).cause;
  if (cause instanceof Error && depth < 3) out.cause = serializeError(cause, depth + 1);
  return out;
}

/** Makes every child logger of `logger`, and theirs, scrub the bindings it is given. */
function scrubbedChildren(logger: Logger): Logger {
  type MakeChild = (bindings: Record<string, unknown>, options?: object) => Logger;
  const make = logger.child.bind(logger) as unknown as MakeChild;
  const child: MakeChild = (bindings, options) => scrubbedChildren(make(scrubDeep(bindings) as Record<string, unknown>, options));
  logger.child = child as unknown as Logger['child'];
  return logger;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const logger = pino(
    {
      level,
      base: { service: 'debit-recovery' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // One scrubbing pass, the hook's below, covers every key at every depth (pino's path-based redaction
      // covered three levels of the same keys again, at about twice the cost of the request's log line).
      // A child logger's bindings do not pass through the hook: scrubbedChildren scrubs them.
      formatters: { level: (label) => ({ level: label }) },
      // Errors are already serialized (and scrubbed) by the hook below; pino's own serializer would turn
      // that plain object into {type: "Object", stack: ""}.
      serializers: { err: (v: unknown) => v },
      hooks: {
        // Scrub every argument, so a message or error text carrying a number is masked too.
        logMethod(args, method) {
          const scrubbed = args.map((a) => scrubDeep(a)) as Parameters<typeof method>;
          method.apply(this, scrubbed);
        },
      },
    },
    destination,
  );
  return scrubbedChildren(logger);
}
