import { randomBase62 } from './ids';
import { API_KEY_PREFIX } from './api-key-format';
import type { KeyHolder } from './engine';

export type { KeyHolder };

// The service's own API keys: stored as SHA-256 hashes with a short display prefix. The lenders' stores read
// and write them (modules/lenders), authentication's lookup included.

// Shown to operators (key list, revoke); 8 random characters tell keys apart and cannot authenticate.
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

export const hashApiKey = (key: string): string => new Bun.CryptoHasher('sha256').update(key).digest('hex');
export const generateApiKey = (): string => API_KEY_PREFIX + randomBase62(32);
export const displayPrefix = (key: string): string => key.slice(0, DISPLAY_PREFIX_LENGTH);
