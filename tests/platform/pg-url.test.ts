// engine: once
// A DATABASE_URL as the start-up error shows it: never any part of its password, however the password is
// written (an @ or a / that was not percent-encoded makes the URL parser take part of it for the host).
import { expect, test } from 'bun:test';
import { passwordNeedsEncoding, redactedMessage, redactedUrl } from '../../src/platform/pg';

test('the password is hidden whole, encoded or not, and the rest of the URL is shown', () => {
  expect(redactedUrl('postgres://drs:secret@db.internal:5432/drs')).toBe('postgres://drs:***@db.internal:5432/drs');
  expect(redactedUrl('postgres://drs3:p@ss/w+rd=1@ss.example:5432/w')).toBe('postgres://drs3:***@ss.example:5432/w');
  expect(redactedUrl('postgresql://drs:p%40ss@127.0.0.1/db')).toBe('postgresql://drs:***@127.0.0.1/db');
  expect(redactedUrl('postgres://drs@127.0.0.1/db')).toBe('postgres://drs@127.0.0.1/db');
  expect(redactedUrl('postgres://127.0.0.1/db')).toBe('postgres://127.0.0.1/db');
  expect(redactedUrl('not a url')).toBe('postgres://(unparsable)');
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
