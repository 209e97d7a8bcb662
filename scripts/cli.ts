// Operator CLI: `bun run cli <command>`. Works on the database and vault key named by the same environment
// variables as the service (DATABASE_URL / DATABASE_PATH, VAULT_KEY / VAULT_OLD_KEYS / VAULT_KEY_FILE). Every
// command is safe beside a running service but `vault rotate` with a key file, which writes a new key the
// service loads only at start: rotate that with the service stopped; and `db copy`, which refuses a running
// service (scripts/db-copy.ts). With VAULT_KEY, the services are
// restarted on the new key first (docs/operations.md, "Rotating the vault key"), and rotation runs beside them.
import { Database } from 'bun:sqlite';
import { appendFileSync, existsSync, renameSync, writeFileSync, chmodSync, openSync, closeSync } from 'node:fs';
import { ConfigError, loadConfig, requireSharedVaultKey, type Config } from '../src/config';
import { openDatabase, immediate, SchemaTooNewError, type DbHandle } from '../src/platform/db';
import { applyPgMigrations, openPg, pgDbHandle } from '../src/platform/pg';
import { pgStores, sqliteStores } from '../src/stores';
import type { Stores } from '../src/deps';

/** The database the commands work on, with the stores of its engine. */
export type CliHandle = DbHandle & { stores: Stores } & TransactionsSlot;
export const withStores = (h: DbHandle): CliHandle =>
  Object.assign(h, { stores: h.pg ? pgStores : sqliteStores, engine: { transactions: h.pg ? pgTransactions(h.pg) : sqliteTransactions(h.db) } });
import { generateVaultKey, loadVault, type Vault } from '../src/platform/vault';
import { SEALED_COLUMNS } from '../src/modules';
import { transaction, type TransactionsSlot } from '../src/platform/context';
import { sqliteTransactions } from '../src/platform/transactions.sqlite';
import { pgTransactions } from '../src/platform/transactions.pg';
import {
  createLender,
  findLender,
  issueKey,
  TooManyApiKeys,
  LenderError,
  listKeys,
  listLenders,
  revokeKey,
  setDebitCardApproval,
} from '../src/modules/lenders/service';
import { createSandboxCharge, SandboxProcessor } from '../src/adapters/processors/sandbox';
import { KeyRefused, ProcessorUnavailable } from '../src/adapters/processors/types';
import { systemClock } from '../src/platform/clock';
import { createUser, disableUser, listUsers, normalizeEmail, resetPassword, UserError } from '../src/modules/portal/users';
import { listBindings, releaseAccount } from '../src/modules/payment-connections/accounts';
import { copyDatabase, CopyError, MAX_BATCH_ROWS, parseTarget, sourceOf } from './db-copy';

const USAGE = `Usage: bun run cli <command>

  lender create NAME            create a lender and print its first API key (shown once)
  lender list                   list lenders
  lender approve-cards NAME     allow debit-card balance reads for the lender
  lender revoke-cards NAME      withdraw that approval
  key create LENDER             issue another API key for the lender (shown once; at most 25 live)
  key list LENDER               list the lender's keys (prefixes only)
  key revoke PREFIX             revoke the key with that prefix
  backup FILE                   consistent online copy of the database, integrity-checked
  vault rotate                  new vault key; re-seal every stored secret under it (service stopped); with
                                VAULT_KEY set: re-seal every secret under VAULT_KEY, the old keys given in
                                VAULT_OLD_KEYS (services running, each already on the new key)
  vault status                  how many sealed values each vault key holds
  user create LENDER EMAIL --name "DISPLAY NAME" --password-stdin
                                a dashboard user of the lender (reads the password, 12+ characters, from stdin)
  user list LENDER              the lender's dashboard users
  user disable EMAIL            no more sign-ins; open sessions end
  user reset-password EMAIL --password-stdin
                                a new password (from stdin); open sessions end
  account list                  processor accounts and the lender each is bound to
  account release PROCESSOR ACCOUNT_ID
                                release an account that changed hands (no live key of its lender may use it);
                                the next lender to register a key of it is credited from then on only
  sandbox charge --key KEY --amount CENTS --reference REF [--rail ach|card]
                                create a payment at the sandbox processor, as a lender would outside the service
  db copy --to postgres://USER:PASSWORD@HOST:5432/DB | --to sqlite:PATH [--batch-size ROWS]
                                copy the stopped service's database into an empty one of the other engine,
                                verified table by table (VAULT_KEY: the key the service uses); run it again
                                after an interruption to go on (docs/operations.md, "Moving to the other engine")`;

export class CliError extends Error {}

const iso = (ms: number | null) => (ms == null ? '-' : new Date(ms).toISOString());

function table(rows: Record<string, string>[]): string {
  if (rows.length === 0) return '(none)';
  const cols = Object.keys(rows[0]!);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(width[i]!)).join('  ').trimEnd();
  return [line(cols), ...rows.map((r) => line(cols.map((c) => r[c]!)))].join('\n');
}

async function lenderOrFail(h: CliHandle, name: string | undefined) {
  if (!name) throw new CliError('Name the lender');
  const lender = await findLender(h, name);
  if (!lender) throw new CliError(`No lender named ${name}`);
  return lender;
}

export function backup(sqlite: Database, file: string): { integrity: string } {
  if (existsSync(file)) throw new CliError(`${file} already exists; choose a new file name`);
  // The copy holds what the database holds (phone numbers, zip codes in the clear): owner-only, as the
  // database and the vault key are, whatever the umask. VACUUM INTO fills an empty file it is given.
  closeSync(openSync(file, 'wx', 0o600));
  chmodSync(file, 0o600);
  sqlite.query('VACUUM INTO ?').run(file);
  chmodSync(file, 0o600);
  const copy = new Database(file, { readonly: true });
  try {
    const rows = copy.query('PRAGMA integrity_check').all() as { integrity_check: string }[];
    const result = rows.map((r) => r.integrity_check).join('; ');
    if (result !== 'ok') throw new CliError(`Backup written to ${file} but its integrity check failed: ${result}`);
    return { integrity: result };
  } finally {
    copy.close();
  }
}

/** Counts of sealed values per vault key id. */
export async function vaultStatus(h: CliHandle): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { table: t, column } of SEALED_COLUMNS) {
    const query = `SELECT ${column} AS v FROM ${t} WHERE ${column} IS NOT NULL`;
    const rows = (h.pg ? await h.pg.sql.unsafe(query) : h.sqlite.query(query).all()) as { v: string }[];
    for (const { v } of rows) {
      const kid = v.split('.')[1] ?? '?';
      counts[kid] = (counts[kid] ?? 0) + 1;
    }
  }
  return counts;
}

/**
 * Re-seals every sealed value not under the vault's current key, in one transaction; a row the service
 * changes meanwhile is locked until it commits. Nothing changes when a value is under a key the vault does
 * not hold: those are counted first and named.
 */
async function resealAll(h: CliHandle, vault: Vault): Promise<number> {
  const unknown = new Map<string, number>();
  for (const [kid, n] of Object.entries(await vaultStatus(h))) if (!vault.holdsKey(kid)) unknown.set(kid, n);
  if (unknown.size > 0) {
    const which = [...unknown].map(([kid, n]) => `${n} under key id ${kid}`).join(', ');
    throw new CliError(`Some sealed values are under a key this vault does not hold (${which}): give that key in VAULT_OLD_KEYS and run it again. Nothing was changed.`);
  }
  let resealed = 0;
  if (h.pg) {
    await h.pg.sql.begin(async (tx) => {
      for (const { table: t, key, column } of SEALED_COLUMNS) {
        const rows = (await tx.unsafe(`SELECT ${key}::text AS k, ${column} AS v FROM ${t} WHERE ${column} IS NOT NULL FOR UPDATE`)) as { k: string; v: string }[];
        for (const { k, v } of rows) {
          if (!vault.needsReseal(v)) continue;
          await tx.unsafe(`UPDATE ${t} SET ${column} = $1 WHERE ${key}::text = $2`, [vault.reseal(v), k]);
          resealed++;
        }
      }
    });
    return resealed;
  }
  const sqlite = h.sqlite;
  immediate(sqlite, () => {
    for (const { table: t, key, column } of SEALED_COLUMNS) {
      const rows = sqlite.query(`SELECT ${key} AS k, ${column} AS v FROM ${t} WHERE ${column} IS NOT NULL`).all() as { k: string | number; v: string }[];
      const update = sqlite.query(`UPDATE ${t} SET ${column} = ? WHERE ${key} = ?`);
      for (const { k, v } of rows) {
        if (!vault.needsReseal(v)) continue;
        update.run(vault.reseal(v), k);
        resealed++;
      }
    }
  });
  return resealed;
}

/**
 * Rotation. With the key in VAULT_KEY_FILE (SQLite), it survives a crash at any step: the old key is kept in
 * `<file>.old` first, a new key replaces the key file atomically, then every sealed value is re-sealed in one
 * transaction; running it again after a crash finishes the job. With VAULT_KEY set (always on PostgreSQL),
 * the operator has already made the new key VAULT_KEY and given the old ones in VAULT_OLD_KEYS: rotation
 * re-seals every value under VAULT_KEY and writes no file.
 */
export async function rotateVault(config: Config, h: CliHandle): Promise<{ resealed: number; keyId: string; generated: boolean }> {
  if (config.vaultKey) {
    const { vault } = loadVault(config);
    return { resealed: await resealAll(h, vault), keyId: vault.currentKeyId, generated: false };
  }
  loadVault(config); // fails loudly before anything changes if the current key is unreadable
  const oldKeyText = (await Bun.file(config.vaultKeyFile).text()).trim();
  appendFileSync(`${config.vaultKeyFile}.old`, oldKeyText + '\n', { mode: 0o600 });
  const newKey = generateVaultKey();
  const tmp = `${config.vaultKeyFile}.tmp`;
  writeFileSync(tmp, newKey.toString('base64') + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, config.vaultKeyFile);
  const { vault } = loadVault(config); // new key current, every older key readable
  return { resealed: await resealAll(h, vault), keyId: vault.currentKeyId, generated: true };
}

/** The password a command reads from standard input (one line; the newline is not part of it). */
async function passwordFrom(readStdin: () => Promise<string>, argv: string[]): Promise<string> {
  if (!argv.includes('--password-stdin')) throw new CliError('Give the password on standard input with --password-stdin (never as an argument)');
  return (await readStdin()).replace(/\r?\n$/, '');
}

/** `db copy`: the service's database (its own settings name it) into an empty one of the other engine. */
async function dbCopy(argv: string[], config: Config, progress: (line: string) => void): Promise<string> {
  const opt = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i > 1 ? argv[i + 1] : undefined;
  };
  const batch = opt('batch-size');
  if (batch !== undefined && !(/^[1-9]\d{0,3}$/.test(batch) && Number(batch) <= MAX_BATCH_ROWS)) throw new CliError(`--batch-size is a number of rows from 1 to ${MAX_BATCH_ROWS}`);
  // The copy never opens a sealed value, but the service on the target opens them all with VAULT_KEY: the
  // copy checks, before it writes anything, that every value is under a key the service will have.
  if (!config.vaultKey) {
    throw new CliError(
      'db copy needs VAULT_KEY, the vault key the service uses (the service on PostgreSQL requires it): on SQLite with a key file, ' +
        `VAULT_KEY=$(cat ${config.vaultKeyFile}); any older keys in ${config.vaultKeyFile}.old go in VAULT_OLD_KEYS`,
    );
  }
  const { vault } = loadVault(config);
  try {
    const source = sourceOf(config);
    const target = parseTarget(opt('to'));
    const report = await copyDatabase({
      source,
      target,
      sealed: { columns: SEALED_COLUMNS, holdsKey: (id) => vault.holdsKey(id) },
      batchRows: batch === undefined ? undefined : Number(batch),
      progress,
    });
    const start = target.engine === 'postgres' ? 'DATABASE_URL=<the target> and the same VAULT_KEY' : `DATABASE_PATH=${target.path}, no DATABASE_URL, and the same VAULT_KEY`;
    return `Copied ${report.tables.length} tables, ${report.rows} rows; every table's row count and checksum match the source. Start the service with ${start}.`;
  } catch (e) {
    if (e instanceof CopyError) throw new CliError(e.message);
    throw e;
  }
}

export async function runCli(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
  io: { readStdin: () => Promise<string>; progress?: (line: string) => void } = { readStdin: () => Bun.stdin.text() },
): Promise<string> {
  const [group, action, arg] = argv;
  if (!group || group === 'help' || group === '--help') return USAGE;
  const config = loadConfig(env);
  // Before the service's database is opened: the copy reads it as it is (never migrated), and opens the target itself.
  if (group === 'db' && action === 'copy') return dbCopy(argv, config, io.progress ?? ((line) => console.error(line)));
  // On PostgreSQL the vault key is VAULT_KEY, as the service requires: never a key file made here.
  if (group === 'vault') requireSharedVaultKey(config);
  // The service's database: PostgreSQL when DATABASE_URL is set (migrated as a start does), else the file.
  if (config.databaseUrl) await applyPgMigrations(config.databaseUrl);
  const h = withStores(config.databaseUrl ? pgDbHandle(openPg(config.databaseUrl, { max: 2 })) : openDatabase(config.databasePath));
  const now = Date.now();
  try {
    switch (group === 'backup' ? 'backup' : `${group} ${action ?? ''}`.trim()) {
      case 'lender create': {
        if (!arg) throw new CliError('Usage: lender create NAME');
        const { lender, apiKey } = await createLender(h, arg, now);
        return `Created lender ${lender.name} (${lender.id}).\nAPI key (shown only this once):\n  ${apiKey}`;
      }
      case 'lender list':
        return table(
          (await listLenders(h)).map((l) => ({
            name: l.name,
            id: l.id,
            debit_cards: l.debitCardApproved ? 'approved' : 'no',
            created: iso(l.createdAt),
          })),
        );
      case 'lender approve-cards':
      case 'lender revoke-cards': {
        const lender = await lenderOrFail(h, arg);
        const approve = action === 'approve-cards';
        await setDebitCardApproval(h, lender.id, approve);
        return `Debit-card balance reads ${approve ? 'approved' : 'withdrawn'} for ${lender.name}.`;
      }
      case 'key create': {
        const lender = await lenderOrFail(h, arg);
        let apiKey: string;
        try {
          apiKey = await transaction({ deps: h }, (tx) => issueKey(tx, lender.id, now));
        } catch (e) {
          if (e instanceof TooManyApiKeys) throw new CliError(`${e.message}. Revoke one first (key list ${lender.name}, then key revoke PREFIX).`);
          throw e;
        }
        return `API key for ${lender.name} (shown only this once):\n  ${apiKey}`;
      }
      case 'key list': {
        const lender = await lenderOrFail(h, arg);
        return table(
          (await listKeys(h, lender.id)).map((k) => ({
            prefix: k.prefix,
            created: iso(k.createdAt),
            last_used: iso(k.lastUsedAt),
            revoked: iso(k.revokedAt),
          })),
        );
      }
      case 'key revoke': {
        if (!arg) throw new CliError('Usage: key revoke PREFIX');
        if (!(await revokeKey(h, arg, now))) throw new CliError(`No live key with prefix ${arg}`);
        return `Revoked ${arg}.`;
      }
      case 'backup': {
        if (!action) throw new CliError('Usage: backup FILE');
        if (h.pg) throw new CliError('The service runs on PostgreSQL (DATABASE_URL): back it up with pg_dump, as docs/operations.md "Running on PostgreSQL" shows');
        backup(h.sqlite, action);
        return `Backup written to ${action}; integrity check ok.`;
      }
      case 'vault rotate': {
        const { resealed, keyId, generated } = await rotateVault(config, h);
        if (!generated) return `${resealed} sealed values re-sealed under VAULT_KEY (key id ${keyId}); every sealed value is now under it. Once every replica runs with this VAULT_KEY, VAULT_OLD_KEYS can be removed.`;
        return `Vault key rotated (new key id ${keyId}); ${resealed} sealed values re-sealed. Older keys stay in ${config.vaultKeyFile}.old until you remove them.`;
      }
      case 'vault status': {
        const counts = await vaultStatus(h);
        const { vault } = loadVault(config);
        return table(
          Object.entries(counts).map(([kid, n]) => ({ key_id: kid, current: kid === vault.currentKeyId ? 'yes' : 'no', values: String(n) })),
        );
      }
      case 'user create': {
        const lender = await lenderOrFail(h, arg);
        const email = argv[3];
        const i = argv.indexOf('--name');
        const name = i > 0 ? argv[i + 1] : undefined;
        if (!email || !name) throw new CliError('Usage: user create LENDER EMAIL --name "DISPLAY NAME" --password-stdin');
        const user = await createUser(h, { lenderId: lender.id, email, displayName: name, password: await passwordFrom(io.readStdin, argv), now });
        return `Created dashboard user ${user.email} (${user.displayName}) for ${lender.name}. Sign in at /portal/login.`;
      }
      case 'user list': {
        const lender = await lenderOrFail(h, arg);
        return table((await listUsers(h, lender.id)).map((u) => ({ email: u.email, name: u.displayName, created: iso(u.createdAt), disabled: iso(u.disabledAt) })));
      }
      case 'user disable': {
        if (!arg) throw new CliError('Usage: user disable EMAIL');
        if (!(await disableUser(h, arg, now))) throw new CliError(`No user with the email ${arg}`);
        return `Disabled ${normalizeEmail(arg)}; its sessions are ended.`;
      }
      case 'user reset-password': {
        if (!arg) throw new CliError('Usage: user reset-password EMAIL --password-stdin');
        if (!(await resetPassword(h, arg, await passwordFrom(io.readStdin, argv)))) throw new CliError(`No user with the email ${arg}`);
        return `New password set for ${normalizeEmail(arg)}; its sessions are ended.`;
      }
      case 'account list':
        return table((await listBindings({ deps: h })).map((b) => ({ processor: b.processor, account: b.accountId, lender: b.lender, bound: iso(b.boundAt) })));
      case 'account release': {
        const accountId = argv[3];
        if ((arg !== 'sandbox' && arg !== 'stripe') || !accountId) throw new CliError('Usage: account release sandbox|stripe ACCOUNT_ID');
        const r = await transaction({ deps: h }, (tx) => releaseAccount(tx, arg, accountId));
        if (r === 'unknown') throw new CliError(`No ${arg} account ${accountId} is bound to a lender`);
        if (r === 'in_use') throw new CliError(`A live processor key of its lender still uses ${accountId}; the lender deletes it first`);
        return `Released ${arg} account ${accountId}: the next lender to register a key of it is bound to it from then on.`;
      }
      case 'sandbox charge': {
        // Flags, not positions: a charge has several required values and an optional rail.
        const opt = (name: string) => {
          const i = argv.indexOf(`--${name}`);
          return i > 1 ? argv[i + 1] : undefined;
        };
        const usage = 'Usage: sandbox charge --key KEY --amount CENTS --reference REF [--rail ach|card]';
        const [key, amount, reference, rail = 'ach'] = [opt('key'), opt('amount'), opt('reference'), opt('rail')];
        if (!key || !amount || !reference) throw new CliError(usage);
        if (!/^[1-9]\d{0,9}$/.test(amount)) throw new CliError('--amount is a positive whole number of cents');
        if (rail !== 'ach' && rail !== 'card') throw new CliError('--rail is ach or card');
        const processor = new SandboxProcessor({
          // The sandbox's tables are in the service's database, whichever engine it runs on.
          ...(h.pg ? { pg: h.pg } : { sqlite: h.sqlite }),
          clock: systemClock,
          settlementMs: config.sandboxSettlementMs,
          idempotencyTtlMs: config.sandboxIdempotencyTtlMs,
          outageMs: config.sandboxOutageMs,
          eventRetentionMs: config.sandboxEventRetentionMs,
        });
        try {
          const r = await createSandboxCharge(processor, key, { amountCents: Number(amount), reference, rail });
          return `Created sandbox payment ${r.processorPaymentId}: status ${r.status}${r.returnCode ? ` ${r.returnCode}` : ''}, reference ${reference}.`;
        } catch (e) {
          // The key stays out of the message: the processor's refusal never echoes it.
          if (e instanceof KeyRefused || e instanceof ProcessorUnavailable) throw new CliError(e.message);
          throw e;
        }
      }
      default:
        throw new CliError(`Unknown command: ${argv.join(' ')}\n\n${USAGE}`);
    }
  } finally {
    h.close();
    await h.pg?.close();
  }
}

if (import.meta.main) {
  try {
    console.log(await runCli(process.argv.slice(2)));
  } catch (e) {
    if (e instanceof CliError || e instanceof LenderError || e instanceof UserError || e instanceof ConfigError || e instanceof SchemaTooNewError) {
      console.error(e.message);
      process.exit(1);
    }
    throw e;
  }
}
