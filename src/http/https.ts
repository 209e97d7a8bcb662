import type { Config } from '../config';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;
export const isLoopback = (address: string | null | undefined): boolean => !!address && LOOPBACK.test(address);

/**
 * Whether a request may be served. HTTPS (served directly, or behind a trusted proxy that says so) always
 * may; plain HTTP only from loopback, or anywhere when ALLOW_INSECURE_HTTP is set. A trusted proxy that
 * forwards plain HTTP is a remote client over HTTP, whatever address the proxy connects from.
 * `remoteAddress` is null for in-process requests (app.handle), which are local by definition.
 */
export function httpsAllowed(
  config: Config,
  request: Request,
  remoteAddress: string | null,
): boolean {
  if (config.tlsCertFile) return true;
  if (config.allowInsecureHttp) return true;
  if (config.trustProxy) {
    const proto = request.headers.get('x-forwarded-proto');
    if (proto) return proto.split(',')[0]!.trim().toLowerCase() === 'https';
  }
  return remoteAddress === null || isLoopback(remoteAddress);
}
