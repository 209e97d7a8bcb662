import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { checkWebhookUrl, classifyAddress, syntaxProblem } from '../../src/adapters/webhooks/ssrf';

describe('classifyAddress', () => {
  test.each([
    ['0.0.0.0', 'unspecified'],
    ['0.255.1.2', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.254', 'carrier-grade NAT'],
    ['127.0.0.1', 'loopback'],
    ['127.45.6.7', 'loopback'],
    ['169.254.169.254', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.10', 'documentation'],
    ['192.88.99.1', '6to4 relay'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
  ])('IPv4 %s is refused as %s', (ip, why) => {
    expect(classifyAddress(ip)).toContain(why);
  });

  test.each([
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fc00::1', 'unique local'],
    ['fd00:ec2::254', 'unique local'],
    ['fdff:ffff::1', 'unique local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['ff0e::101', 'multicast'],
    ['100::1', 'discard'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001::1', 'Teredo'],
    ['2001:2::1', 'reserved IETF'],
    ['64:ff9b:1::1', 'NAT64'],
    ['::127.0.0.1', 'reserved'],
    ['1::1', 'reserved'],
    ['5f00::1', 'SRv6'],
  ])('IPv6 %s is refused as %s', (ip, why) => {
    expect(classifyAddress(ip)).toContain(why);
  });

  test.each([
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::FFFF:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::ffff:100.64.0.1', 'carrier-grade NAT'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
    ['2002:a9fe:a9fe::1', 'metadata'],
  ])('IPv4 embedded in IPv6 %s is judged by its IPv4 address (%s)', (ip, why) => {
    expect(classifyAddress(ip)).toContain(why);
  });

  test.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '100.63.255.255',
    '100.128.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '192.167.255.255',
    '11.0.0.1',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is public', (ip) => {
    expect(classifyAddress(ip)).toBe('public');
  });

  test.each(['', 'example.com', '1.2.3', '256.1.1.1', '::ffff::1', '[::1'])('%p is not an address', (text) => {
    expect(classifyAddress(text)).toBe('not an IP address');
  });

  const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  const inRange = (first: string, bits: number) => {
    const base = first.split('.').reduce((a, p) => a * 256 + Number(p), 0);
    return fc.integer({ min: base, max: base + 2 ** (32 - bits) - 1 }).map(dotted);
  };
  const privateV4 = fc.oneof(
    inRange('10.0.0.0', 8),
    inRange('127.0.0.0', 8),
    inRange('192.168.0.0', 16),
    inRange('172.16.0.0', 12),
  );

  test('every address in 10/8, 127/8, 192.168/16 and 172.16/12 is refused, also IPv4-mapped', () => {
    fc.assert(
      fc.property(privateV4, (ip) => {
        expect(classifyAddress(ip)).not.toBe('public');
        expect(classifyAddress(`::ffff:${ip}`)).not.toBe('public');
      }),
      { numRuns: 2000 },
    );
  });
});

describe('checkWebhookUrl', () => {
  const publicDns = async () => ['93.184.215.14'];
  const strict = { allowPrivate: false, resolve: publicDns };
  const lax = { allowPrivate: true, resolve: publicDns };

  async function reason(raw: string, opts: Parameters<typeof checkWebhookUrl>[1]) {
    const r = await checkWebhookUrl(raw, opts);
    if (r.ok) throw new Error(`expected ${raw} to be rejected`);
    return r.reason;
  }

  test('accepts a public https URL and returns the addresses to connect to', async () => {
    const r = await checkWebhookUrl('https://hooks.example.com/webhooks?x=1', strict);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.url.hostname).toBe('hooks.example.com');
      expect(r.addresses).toEqual(['93.184.215.14']);
    }
  });

  test('rejects a relative or malformed URL', async () => {
    expect(await reason('/webhooks', strict)).toContain('not an absolute URL');
    expect(await reason('hooks.example.com/webhooks', strict)).toContain('not an absolute URL');
    expect(await reason('https://', strict)).toContain('not an absolute URL');
  });

  test('rejects an ftp URL', async () => {
    expect(await reason('ftp://hooks.example.com/x', strict)).toContain('scheme ftp');
  });

  test('rejects http unless private targets are allowed', async () => {
    expect(await reason('http://hooks.example.com/x', strict)).toContain('scheme http');
    expect((await checkWebhookUrl('http://hooks.example.com/x', lax)).ok).toBe(true);
  });

  test('rejects userinfo, even an empty one', async () => {
    for (const raw of ['https://user:pw@hooks.example.com/', 'https://user@hooks.example.com/', 'https://@hooks.example.com/']) {
      expect(await reason(raw, strict)).toContain('userinfo');
    }
  });

  test('rejects https://localhost/ without asking DNS', async () => {
    let asked = false;
    const resolve = async () => ((asked = true), ['93.184.215.14']);
    expect(await reason('https://localhost/', { allowPrivate: false, resolve })).toContain('loopback');
    expect(await reason('https://api.localhost./', { allowPrivate: false, resolve })).toContain('loopback');
    expect(asked).toBe(false);
  });

  test('checks IP literals without DNS, whatever notation the URL uses', async () => {
    const resolve = async (): Promise<string[]> => {
      throw new Error('must not be called');
    };
    for (const raw of [
      'https://127.0.0.1/',
      'https://2130706433/',
      'https://0x7f.0.0.1/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://169.254.169.254/latest/meta-data',
      'https://[fe80::1]/',
      'https://[fd00::1]/',
      'https://0.0.0.0/',
      'https://[::]/',
    ]) {
      expect(await reason(raw, { allowPrivate: false, resolve })).toContain('not allowed');
    }
    const r = await checkWebhookUrl('https://[2606:4700:4700::1111]:8443/x', { allowPrivate: false, resolve });
    expect(r.ok && r.addresses).toEqual(['2606:4700:4700::1111']);
  });

  test('rejects a name that resolves to 127.0.0.1', async () => {
    const r = await checkWebhookUrl('https://hooks.example.test/', { allowPrivate: false, resolve: async () => ['127.0.0.1'] });
    expect(r).toMatchObject({ ok: false, kind: 'forbidden' });
    expect(!r.ok && r.reason).toContain('resolves to 127.0.0.1');
    expect(!r.ok && r.reason).toContain('loopback');
  });

  test('rejects a name when any one of its addresses is forbidden', async () => {
    const resolve = async () => ['93.184.215.14', '2606:4700:4700::1111', '::ffff:10.0.0.5'];
    expect(await reason('https://hooks.example.test/', { allowPrivate: false, resolve })).toContain('::ffff:10.0.0.5');
  });

  test('rejects a name that does not resolve, with the reason', async () => {
    const nx = async (): Promise<string[]> => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    const r = await checkWebhookUrl('https://nowhere.example.test/', { allowPrivate: false, resolve: nx });
    expect(r).toMatchObject({ ok: false, kind: 'unresolvable' });
    expect(!r.ok && r.reason).toContain('does not resolve (ENOTFOUND)');
    expect(await reason('https://nowhere.example.test/', { allowPrivate: false, resolve: async () => [] })).toContain(
      'does not resolve',
    );
  });

  test('uses the system resolver by default', async () => {
    // localhost is answered from the hosts file, so this needs no network.
    const r = await checkWebhookUrl('http://localhost:3000/', { allowPrivate: true });
    expect(r.ok).toBe(true);
    expect(r.ok && r.addresses.every((a) => classifyAddress(a).includes('loopback'))).toBe(true);
  });

  test('allowPrivate lifts the address and scheme rules', async () => {
    const loopback = async () => ['127.0.0.1'];
    for (const raw of ['http://127.0.0.1:8080/x', 'https://[::1]/', 'http://localhost:3000/', 'http://10.0.0.5/']) {
      expect((await checkWebhookUrl(raw, { allowPrivate: true, resolve: loopback })).ok).toBe(true);
    }
    const r = await checkWebhookUrl('http://hooks.internal/x', { allowPrivate: true, resolve: loopback });
    expect(r.ok && r.addresses).toEqual(['127.0.0.1']);
  });

  test('allowPrivate still requires an absolute http(s) URL without userinfo', async () => {
    expect(await reason('/x', lax)).toContain('not an absolute URL');
    expect(await reason('ftp://hooks.internal/x', lax)).toContain('scheme ftp');
    expect(await reason('file:///etc/passwd', lax)).toContain('scheme file');
    expect(await reason('http://u:p@127.0.0.1/', lax)).toContain('userinfo');
  });
});

describe('syntaxProblem', () => {
  test('answers without DNS and mirrors the shape rules', () => {
    expect(syntaxProblem('https://hooks.example.com/x', false)).toBeNull();
    expect(syntaxProblem('http://hooks.example.com/x', false)).toContain('scheme http');
    expect(syntaxProblem('http://hooks.example.com/x', true)).toBeNull();
    expect(syntaxProblem('https://a:b@hooks.example.com/', true)).toContain('userinfo');
    expect(syntaxProblem('https://10.0.0.1/', false)).toContain('private');
    expect(syntaxProblem('https://10.0.0.1/', true)).toBeNull();
    expect(syntaxProblem('nonsense', true)).toContain('not an absolute URL');
  });
});
