// A query built once per database handle, for both SQL kits (sql/sqlite.ts and sql/pg.ts export it typed for
// their handle as `builtOnce`).

/** `build` called once per handle, its query kept for that handle while the handle lives. */
export function oncePerHandle<H extends object, Q>(build: (db: H) => Q): (db: H) => Q {
  const built = new WeakMap<H, Q>();
  return (db) => {
    let q = built.get(db);
    if (q === undefined) built.set(db, (q = build(db)));
    return q;
  };
}
