// Stripe's request encoding: application/x-www-form-urlencoded with brackets for nesting
// (`metadata[drs_reference]=…`, `payment_method_data[us_bank_account][routing_number]=…`) and indices for
// arrays (`allowed_payment_method_types[0]=card`, also `types[]=…`). Values stay strings, as Stripe
// receives them.

export type FormValue = string | FormValue[] | { [key: string]: FormValue };
export type Form = { [key: string]: FormValue };

export function parseStripeForm(body: string): Form {
  const out: Form = {};
  for (const [rawKey, value] of new URLSearchParams(body)) {
    const head = rawKey.split('[', 1)[0]!;
    const path = [head, ...[...rawKey.slice(head.length).matchAll(/\[([^\]]*)\]/g)].map((m) => m[1]!)];
    let node: Form | FormValue[] = out;
    path.forEach((part, i) => {
      const last = i === path.length - 1;
      const container = node as Record<string | number, FormValue>;
      const slot: string | number = Array.isArray(node) ? (part === '' ? node.length : Number(part)) : part;
      if (last) {
        container[slot] = value;
        return;
      }
      container[slot] ??= /^\d*$/.test(path[i + 1]!) ? [] : {};
      node = container[slot] as Form | FormValue[];
    });
  }
  return out;
}

/** A form field as a string, or undefined when absent or not a plain value. */
export const str = (v: FormValue | undefined): string | undefined => (typeof v === 'string' ? v : undefined);

/** A nested form object, or undefined. */
export const obj = (v: FormValue | undefined): Form | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? v : undefined);

/** A form array of strings (an indexed list), or an empty list. */
export const list = (v: FormValue | undefined): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : []);

/** Params compared for idempotency: the same fields and values, whatever their order on the wire. */
export function fingerprint(form: Form): string {
  const canon = (v: FormValue): unknown =>
    typeof v === 'string' ? v : Array.isArray(v) ? v.map(canon) : Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k]!)]));
  return JSON.stringify(canon(form));
}
