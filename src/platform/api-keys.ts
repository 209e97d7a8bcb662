import { randomBase62 } from './ids';

// The format of the service's own API keys. Keys are stored as SHA-256 hashes with a short display prefix.

export const API_KEY_PREFIX = 'drs_live_';
export const API_KEY_PATTERN = /^drs_live_[0-9A-Za-z]{32}$/;
// Shown to operators (key list, revoke); 8 random characters tell keys apart and cannot authenticate.
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

export const hashApiKey = (key: string): string => new Bun.CryptoHasher('sha256').update(key).digest('hex');
export const generateApiKey = (): string => API_KEY_PREFIX + randomBase62(32);
export const displayPrefix = (key: string): string => key.slice(0, DISPLAY_PREFIX_LENGTH);
