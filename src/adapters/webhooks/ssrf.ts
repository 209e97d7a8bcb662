// Webhook targets are supplied by API callers, so a target must never let them reach the service's own
// network (loopback admin ports, the cloud metadata endpoint, private ranges). Names are judged by the
// addresses they resolve to, because a public-looking name can point anywhere; the sender connects to one of
// the addresses judged here so a later DNS answer cannot swap the destination.
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';

export type Resolver = (host: string) => Promise<string[]>;

/** 'public', or a short phrase naming why the address is not an acceptable target. */
export type AddressClass = 'public' | (string & {});

export type UrlCheck =
  | { ok: true; url: URL; addresses: string[] }
  // kind lets a delivery tell a forbidden target (blocked) from a name that does not resolve right now.
  | { ok: false; reason: string; kind: 'invalid' | 'forbidden' | 'unresolvable' };

export interface CheckOptions {
  allowPrivate: boolean;
  resolve?: Resolver;
}

type Range4 = [base: number, prefix: number, reason: string];

// IANA IPv4 special-purpose registry, plus multicast and the old class E. Anything here is either not routable
// on the internet or would land inside the operator's own network. Earlier entries win, so the specific
// metadata and broadcast addresses are listed before the ranges that hold them.
const FORBIDDEN_V4: Range4[] = [
  [v4('169.254.169.254'), 32, 'cloud metadata address (169.254.169.254)'],
  [v4('255.255.255.255'), 32, 'broadcast address (255.255.255.255)'],
  [v4('0.0.0.0'), 8, 'unspecified / "this network" address (0.0.0.0/8)'],
  [v4('10.0.0.0'), 8, 'private address (10.0.0.0/8)'],
  [v4('100.64.0.0'), 10, 'carrier-grade NAT address (100.64.0.0/10)'],
  [v4('127.0.0.0'), 8, 'loopback address (127.0.0.0/8)'],
  [v4('169.254.0.0'), 16, 'link-local address (169.254.0.0/16)'],
  [v4('172.16.0.0'), 12, 'private address (172.16.0.0/12)'],
  [v4('192.0.0.0'), 24, 'reserved IETF protocol address (192.0.0.0/24)'],
  [v4('192.0.2.0'), 24, 'documentation address (192.0.2.0/24)'],
  [v4('192.88.99.0'), 24, 'reserved 6to4 relay address (192.88.99.0/24)'],
  [v4('192.168.0.0'), 16, 'private address (192.168.0.0/16)'],
  [v4('198.18.0.0'), 15, 'benchmarking address (198.18.0.0/15)'],
  [v4('198.51.100.0'), 24, 'documentation address (198.51.100.0/24)'],
  [v4('203.0.113.0'), 24, 'documentation address (203.0.113.0/24)'],
  [v4('224.0.0.0'), 4, 'multicast address (224.0.0.0/4)'],
  [v4('240.0.0.0'), 4, 'reserved address (240.0.0.0/4)'],
];

type Range6 = [prefix: number[], length: number, reason: string];

// Only 2000::/3 is global unicast, so everything outside it is refused after the forms that embed an IPv4
// address have been unwrapped; these are the non-global blocks that sit inside it or deserve a clearer reason.
const FORBIDDEN_V6: Range6[] = [
  [[0x64, 0xff9b, 0x1], 48, 'local-use NAT64 address (64:ff9b:1::/48)'],
  [[0x100], 64, 'discard-only address (100::/64)'],
  [[0x2001, 0], 32, 'Teredo address (2001::/32)'],
  [[0x2001, 0xdb8], 32, 'documentation address (2001:db8::/32)'],
  [[0x2001], 23, 'reserved IETF protocol address (2001::/23)'],
  [[0x3fff], 20, 'documentation address (3fff::/20)'],
  [[0x5f00], 16, 'SRv6 segment identifier (5f00::/16)'],
  [[0xfc00], 7, 'unique local (private) address (fc00::/7)'],
  [[0xfe80], 10, 'link-local address (fe80::/10)'],
  [[0xfec0], 10, 'deprecated site-local address (fec0::/10)'],
  [[0xff00], 8, 'multicast address (ff00::/8)'],
];

export function classifyAddress(ip: string): AddressClass {
  // A scope id only says which interface to use; the address itself decides.
  const bare = ip.trim().replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const kind = isIP(bare);
  if (kind === 4) return classifyV4(v4(bare));
  if (kind === 6) {
    const words = parseV6(bare);
    if (words) return classifyV6(words);
  }
  return 'not an IP address';
}

function classifyV4(n: number): AddressClass {
  for (const [base, prefix, reason] of FORBIDDEN_V4) {
    if (n >>> (32 - prefix) === base >>> (32 - prefix)) return reason;
  }
  return 'public';
}

function classifyV6(w: number[]): AddressClass {
  const embedded = (hi: number, lo: number, form: string): AddressClass => {
    const verdict = classifyV4(((hi << 16) | lo) >>> 0);
    return verdict === 'public' ? 'public' : `${verdict}, as ${form}`;
  };
  if (w.every((x) => x === 0)) return 'unspecified address (::)';
  if (w.slice(0, 7).every((x) => x === 0) && w[7] === 1) return 'loopback address (::1)';
  // These forms reach an IPv4 host, so the IPv4 host is what gets judged.
  if (startsWith(w, [0, 0, 0, 0, 0, 0xffff], 96)) return embedded(w[6], w[7], 'IPv4-mapped IPv6 (::ffff:0:0/96)');
  if (startsWith(w, [0x64, 0xff9b, 0, 0, 0, 0], 96)) return embedded(w[6], w[7], 'NAT64 (64:ff9b::/96)');
  if (startsWith(w, [0x2002], 16)) return embedded(w[1], w[2], '6to4 (2002::/16)');
  for (const [prefix, length, reason] of FORBIDDEN_V6) {
    if (startsWith(w, prefix, length)) return reason;
  }
  if (!startsWith(w, [0x2000], 3)) return 'reserved address (outside global unicast 2000::/3)';
  return 'public';
}

function startsWith(words: number[], prefix: number[], length: number): boolean {
  for (let bit = 0; bit < length; bit += 16) {
    const take = Math.min(16, length - bit);
    const mask = (0xffff << (16 - take)) & 0xffff;
    const i = bit / 16;
    if ((words[i] & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

function v4(dotted: string): number {
  return dotted.split('.').reduce((acc, part) => acc * 256 + Number(part), 0) >>> 0;
}

/** Eight 16-bit words; the input has already passed isIP, so only the layout needs untangling. */
function parseV6(text: string): number[] | null {
  // A dotted IPv4 tail is two words written differently; rewriting it leaves one notation to parse.
  const s = text.toLowerCase().replace(/(\d+\.\d+\.\d+\.\d+)$/, (dotted) => {
    const n = v4(dotted);
    return `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  });
  const hex = (part: string) => (part === '' ? [] : part.split(':').map((h) => parseInt(h, 16)));
  const halves = s.split('::');
  const head = hex(halves[0]);
  const tail = halves.length === 2 ? hex(halves[1]) : [];
  const gap = new Array<number>(Math.max(0, 8 - head.length - tail.length)).fill(0);
  const words = halves.length === 2 ? [...head, ...gap, ...tail] : head;
  return words.length === 8 && words.every((x) => x >= 0 && x <= 0xffff) ? words : null;
}

interface ParsedTarget {
  url: URL;
  /** Hostname without IPv6 brackets. */
  host: string;
  literal: boolean;
}

function parseTarget(raw: string, allowPrivate: boolean): ParsedTarget | Extract<UrlCheck, { ok: false }> {
  const invalid = (reason: string) => ({ ok: false as const, reason, kind: 'invalid' as const });
  if (!URL.canParse(raw)) return invalid('not an absolute URL');
  const url = new URL(raw);
  const allowed = allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!allowed.includes(url.protocol)) {
    const reason = `scheme ${url.protocol.slice(0, -1)} is not allowed (use ${allowPrivate ? 'http or https' : 'https'})`;
    // Plain http is refused by the policy (private targets allowed lifts it), not because it is no URL to send to.
    return url.protocol === 'http:' ? { ok: false, reason, kind: 'forbidden' } : invalid(reason);
  }
  // Port 0 is no port a receiver listens on; a connection to it is a probe of the operator's network stack.
  if (url.port === '0') return invalid('port 0 is not allowed');
  // The parser quietly drops an empty "@", so the raw authority is looked at as well.
  const authority = raw.trim().replace(/^[a-z][a-z0-9+.-]*:[/\\]*/i, '').split(/[/\\?#]/, 1)[0];
  if (url.username !== '' || url.password !== '' || authority.includes('@')) {
    return invalid('URL must not contain userinfo (user:password@)');
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host) !== 0;
  if (!allowPrivate) {
    const name = host.replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) {
      return { ok: false, reason: `host ${host} is not allowed: localhost names are loopback`, kind: 'forbidden' };
    }
    const verdict = literal ? classifyAddress(host) : 'public';
    if (verdict !== 'public') return { ok: false, reason: `host ${host} is not allowed: ${verdict}`, kind: 'forbidden' };
  }
  return { url, host, literal };
}

/** Checks that need no DNS: shape, scheme, userinfo and, when private targets are refused, IP literals. */
export function syntaxProblem(raw: string, allowPrivate: boolean): string | null {
  const parsed = parseTarget(raw, allowPrivate);
  return 'reason' in parsed ? parsed.reason : null;
}

export const systemResolver: Resolver = async (host) => {
  const answers = await dns.lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};

export async function checkWebhookUrl(raw: string, opts: CheckOptions): Promise<UrlCheck> {
  const parsed = parseTarget(raw, opts.allowPrivate);
  if ('reason' in parsed) return parsed;
  const { url, host, literal } = parsed;
  if (literal) return { ok: true, url, addresses: [host] };

  let addresses: string[];
  try {
    addresses = [...new Set(await (opts.resolve ?? systemResolver)(host))];
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const detail = typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
    return { ok: false, reason: `host ${host} does not resolve (${detail})`, kind: 'unresolvable' };
  }
  if (addresses.length === 0) {
    return { ok: false, reason: `host ${host} does not resolve to any address`, kind: 'unresolvable' };
  }
  for (const address of addresses) {
    const verdict = classifyAddress(address);
    // A resolver answer that is not an address at all is refused even when private targets are allowed:
    // the sender would otherwise have nothing it could safely pin.
    if (verdict === 'not an IP address' || (!opts.allowPrivate && verdict !== 'public')) {
      const reason = `host ${host} resolves to ${address}, which is not allowed: ${verdict}`;
      return { ok: false, reason, kind: 'forbidden' };
    }
  }
  return { ok: true, url, addresses };
}
