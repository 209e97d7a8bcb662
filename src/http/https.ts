import { BlockList, isIP } from 'node:net';
import type { Config } from '../config';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;
export const isLoopback = (address: string | null | undefined): boolean => !!address && LOOPBACK.test(address);

const proxyLists = new WeakMap<Config, BlockList | null>();

/** TRUST_PROXY as a matcher, built once per configuration. */
function trustedProxies(config: Config): BlockList | null {
  let list = proxyLists.get(config);
  if (list !== undefined) return list;
  list = null;
  if (config.trustProxy.length > 0) {
    list = new BlockList();
    for (const entry of config.trustProxy) {
      if (entry === 'loopback') {
        list.addSubnet('127.0.0.0', 8, 'ipv4');
        list.addAddress('::1', 'ipv6');
        continue;
      }
      const [address, prefix] = entry.split('/') as [string, string | undefined];
      const type = isIP(address) === 4 ? 'ipv4' : 'ipv6';
      if (prefix === undefined) list.addAddress(address, type);
      else list.addSubnet(address, Number(prefix), type);
    }
  }
  proxyLists.set(config, list);
  return list;
}

/** An address as written in a header: IPv4-mapped IPv6 as plain IPv4, a port or brackets dropped; null if not an IP. */
function plainAddress(raw: string): string | null {
  let a = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(a);
  if (bracketed) a = bracketed[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(a)) a = a.slice(0, a.lastIndexOf(':'));
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  if (mapped) a = mapped[1]!;
  return isIP(a) === 0 ? null : a;
}

export function isTrustedProxy(config: Config, address: string | null): boolean {
  const list = trustedProxies(config);
  if (!list || address === null) return false;
  const a = plainAddress(address);
  return a !== null && list.check(a, isIP(a) === 4 ? 'ipv4' : 'ipv6');
}

export interface Client {
  /** The client's address: the peer's, or, behind a trusted proxy, the one it forwarded (null if it sent none). */
  address: string | null;
  /** The scheme a trusted proxy says the client used (its X-Forwarded-Proto), else null. */
  forwardedProto: string | null;
  /** The peer is a listed proxy. */
  viaProxy: boolean;
}

/**
 * Who sent a request. Forwarded headers are believed only from a peer listed in TRUST_PROXY; anyone else's are
 * ignored. X-Forwarded-For is read from the right (the hop nearest the service) past every trusted proxy: the
 * first address no trusted proxy would have added is the client's. X-Forwarded-Proto is the value the nearest
 * proxy set (the rightmost). `peer` is null for in-process requests (app.handle).
 */
export function resolveClient(config: Config, request: Request, peer: string | null): Client {
  if (peer === null || !isTrustedProxy(config, peer)) return { address: peer, forwardedProto: null, viaProxy: false };
  let address: string | null = null;
  const hops = (request.headers.get('x-forwarded-for') ?? '').split(',').filter((h) => h.trim() !== '');
  for (let i = hops.length - 1; i >= 0; i--) {
    address = plainAddress(hops[i]!);
    if (address === null || !isTrustedProxy(config, address)) break;
  }
  const proto = request.headers.get('x-forwarded-proto');
  const forwardedProto = proto ? (proto.split(',').pop() ?? '').trim().toLowerCase() || null : null;
  return { address, forwardedProto, viaProxy: true };
}

/**
 * Whether a request may be served. HTTPS (served directly, or behind a trusted proxy that says so) always
 * may; plain HTTP only from loopback, or anywhere when ALLOW_INSECURE_HTTP is set. Behind a trusted proxy the
 * loopback test applies to the forwarded client address, so a proxy on the same host does not make every
 * client local. `remoteAddress` is null for in-process requests (app.handle), which are local by definition.
 */
export function httpsAllowed(config: Config, request: Request, remoteAddress: string | null): boolean {
  if (config.tlsCertFile) return true;
  if (config.allowInsecureHttp) return true;
  if (remoteAddress === null) return true;
  const client = resolveClient(config, request, remoteAddress);
  if (client.forwardedProto !== null) return client.forwardedProto === 'https';
  return isLoopback(client.address);
}

/** Whether the request comes from this host: in process, or from a loopback client (as resolved above). */
export function isLocalClient(config: Config, request: Request, remoteAddress: string | null): boolean {
  return remoteAddress === null || isLoopback(resolveClient(config, request, remoteAddress).address);
}
