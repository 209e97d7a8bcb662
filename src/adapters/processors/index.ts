import type { Database } from 'bun:sqlite';
import type { Clock } from '../../platform/clock';
import type { PgHandle } from '../../platform/pg';
import { SandboxProcessor, SANDBOX_KEY_PATTERN, type SandboxOptions, type SandboxStorage } from './sandbox';
import type { Processor, ProcessorName } from './types';
import { refusedInTransaction } from '../../platform/tx-lock';
import { withCallScope } from '../../platform/provider-calls';

export * from './types';

// Which processor stands behind a key is read from the key's prefix, here and nowhere else.

const STRIPE_KEY_PATTERN = /^(sk|rk)_(live|test)_[A-Za-z0-9_]+$/;

/** The processor a key belongs to, or null for a key of no supported processor. */
/**
 * Why a key that starts as one processor's keys do is not one of them (its length, its characters), in words
 * that never quote it; null when the prefix is no processor's.
 */
export function keyShapeProblem(key: string): string | null {
  if (key.startsWith('sbx_')) {
    const rest = key.slice(4);
    if (!/^[A-Za-z0-9_]*$/.test(rest)) return 'a sandbox key is sbx_ followed by letters, digits and underscores only';
    return 'this sandbox key is too short: a sandbox key is sbx_ followed by at least 16 letters, digits or underscores';
  }
  if (/^(sk|rk)_(live|test)_/.test(key)) return 'a Stripe key is sk_ or rk_, live_ or test_, then letters, digits and underscores only';
  return null;
}

export function processorOfKey(key: string): ProcessorName | null {
  if (SANDBOX_KEY_PATTERN.test(key)) return 'sandbox';
  if (STRIPE_KEY_PATTERN.test(key)) return 'stripe';
  return null;
}

/** A factory for the processors that are not built in (Stripe), so tests and deployments can supply their own. */
export type ProcessorFactory = Partial<Record<ProcessorName, () => Processor>>;

/** The processors of this service, each created once, picked by a key's prefix. */
export class Processors {
  private readonly made = new Map<ProcessorName, Processor>();

  constructor(private readonly factories: Record<ProcessorName, () => Processor>) {}

  /** The processor behind this key; null when the key belongs to none. */
  forKey(key: string): Processor | null {
    const name = processorOfKey(key);
    return name ? this.byName(name) : null;
  }

  /** The processor by its name, each of its calls counted and, when it fails, logged as the lender's. */
  forLender(name: ProcessorName, lenderId: string): Processor {
    const p = this.byName(name);
    return new Proxy(p, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (...args: unknown[]) => withCallScope({ lenderId }, () => v.apply(target, args)) : v;
      },
    });
  }

  byName(name: ProcessorName): Processor {
    let p = this.made.get(name);
    if (!p) {
      // Never called holding the write lock: the answer may take seconds.
      p = refusedInTransaction(`the ${name} processor`, this.factories[name]());
      this.made.set(name, p);
    }
    return p;
  }
}

/** The processors of a service: the sandbox keeps its tables in the service's database, PostgreSQL when `pg` is given. */
export function createProcessors(opts: {
  sqlite?: Database;
  pg?: PgHandle;
  clock: Clock;
  sandbox: Omit<SandboxOptions, 'sqlite' | 'pg' | 'clock'>;
  stripe: () => Processor;
}): Processors {
  const storage: SandboxStorage | null = opts.pg ? { pg: opts.pg } : opts.sqlite ? { sqlite: opts.sqlite } : null;
  if (!storage) throw new Error('createProcessors: the sandbox needs the service\'s database (sqlite or pg)');
  return new Processors({
    sandbox: () => new SandboxProcessor({ ...storage, clock: opts.clock, ...opts.sandbox }),
    stripe: opts.stripe,
  });
}
