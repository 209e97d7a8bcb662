// The format of the service's own API keys: what a key looks like, checked by the configuration (a bootstrap
// key) and by authentication before any lookup. Nothing here reaches the database.

export const API_KEY_PREFIX = 'drs_live_';
export const API_KEY_PATTERN = /^drs_live_[0-9A-Za-z]{32}$/;
