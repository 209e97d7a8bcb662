// What a context does not have (a worker's vault, the SQLite connection of a service on PostgreSQL): an object
// that throws when touched, naming itself and where it is missing.

/** An object whose every property read throws, naming it: what a worker must not use. */
export function absent<T>(name: string, where = 'in this worker'): T {
  return new Proxy(
    {},
    {
      get: (_t, prop) => {
        throw new Error(`${name}.${String(prop)} is not available ${where}`);
      },
    },
  ) as T;
}
