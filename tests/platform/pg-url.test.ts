// engine: once
// A DATABASE_URL as the start-up error shows it: never any part of its password, however the password is
// written (an @ or a / that was not percent-encoded makes the URL parser take part of it for the host).
import { expect, test } from 'bun:test';
import { passwordNeedsEncoding, redactedMessage, redactedUrl } from '../../src/platform/pg';
import { ConfigError, loadConfig, withoutCredentials } from '../../src/config';

test('the password is hidden whole, encoded or not, and the rest of the URL is shown', () => {
  expect(redactedUrl('postgres://drs:secret@db.internal:5432/drs')).toBe('postgres://drs:***@db.internal:5432/drs');
  expect(redactedUrl('postgres://drs3:p@ss/w+rd=1@ss.example:5432/w')).toBe('postgres://drs3:***@ss.example:5432/w');
  expect(redactedUrl('postgresql://drs:p%40ss@127.0.0.1/db')).toBe('postgresql://drs:***@127.0.0.1/db');
  expect(redactedUrl('postgres://drs@127.0.0.1/db')).toBe('postgres://drs@127.0.0.1/db');
  expect(redactedUrl('postgres://127.0.0.1/db')).toBe('postgres://127.0.0.1/db');
  expect(redactedUrl('not a url')).toBe('postgres://(unparsable)');
  // A colon in the password, and both an @ and a colon.
  expect(redactedUrl('postgres://drs:pa:ss@db:5432/drs')).toBe('postgres://drs:***@db:5432/drs');
  expect(redactedUrl('postgres://drs:p@s:s/w@db:5432/drs')).toBe('postgres://drs:***@db:5432/drs');
});

test('an http(s) setting that is not a URL is shown without its user and password, whatever they hold', () => {
  for (const [value, secret] of [
    ['ftp://user:p@ss:w0rd@bank.example/api', 'p@ss:w0rd'],
    ['https://user:p@ss w0rd@bank example.com/api', 'p@ss w0rd'],
    ['user:s3cr:et@bank.example', 's3cr:et'],
  ] as const) {
    let message = '';
    try {
      loadConfig({ BANK_DATA_PROVIDER: 'http', BANK_DATA_URL: value });
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      message = (e as Error).message;
    }
    expect(message).toContain('BANK_DATA_URL');
    expect(message).toContain('percent-encode');
    expect(message).not.toContain(secret);
    expect(message).not.toContain('user:');
    expect(message.split('\n')).toHaveLength(1);
  }
  expect(withoutCredentials('https://bank.example/api')).toBe('https://bank.example/api');
});

test("a driver's message is shown without the password, as written or decoded", () => {
  const url = 'postgres://drs:p%40ss-w0rd@127.0.0.1:1/db';
  expect(redactedMessage(`could not connect to ${url}: refused (password p@ss-w0rd)`, url)).toBe('could not connect to postgres://drs:***@127.0.0.1:1/db: refused (password ***)');
  expect(redactedMessage('Connection refused', 'postgres://drs@127.0.0.1/db')).toBe('Connection refused');
});

test('a password that must be percent-encoded is told apart', () => {
  expect(passwordNeedsEncoding('postgres://drs3:p@ss/w+rd=1@host/w')).toBe(true);
  expect(passwordNeedsEncoding('postgres://drs3:p@ss@host/w')).toBe(true);
  expect(passwordNeedsEncoding('postgres://drs3:p%40ss@host/w')).toBe(false);
  expect(passwordNeedsEncoding('postgres://drs3@host/w')).toBe(false);
});
