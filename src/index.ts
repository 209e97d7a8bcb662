import { readFileSync } from 'node:fs';
import http from 'node:http';
import { baseUrl, ConfigError, loadConfig, requireSharedVaultKey } from './config';
import { createApp } from './app';
import { createRuntime } from './runtime';
import { JobRunner } from './platform/jobs';
import { startCheckpointer } from './platform/checkpointer';
import { DatabaseInUseError, lockDatabase, SchemaTooNewError } from './platform/db';
import { applyPgMigrations, passwordNeedsEncoding, redactedMessage, redactedUrl } from './platform/pg';
import { ensureBootstrapLender } from './modules/lenders/service';
import { featureJobs, releaseStaleClaims } from './modules';
import { writeProviderCalls } from './modules/bank-data-connections/usage';
import { SERVER_HEADER_CEILING_BYTES } from './http/limits';

/** A start-up error the operator can act on is one line and exit 2; anything else is a bug, thrown as it is. */
function stopOn(e: unknown): never {
  if (e instanceof ConfigError || e instanceof SchemaTooNewError || e instanceof DatabaseInUseError) {
    console.error(e.message);
    process.exit(2);
  }
  throw e;
}

/** `fn`, its file-system failure told as a bad setting: the variable, what it must name, and the system's reason. */
function asSetting<T>(variable: string, expected: string, value: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (e instanceof ConfigError || e instanceof DatabaseInUseError || typeof code !== 'string') throw e;
    throw new ConfigError(variable, `${expected} (${code})`, value);
  }
}

// start: config → vault + database (migrations) → app → jobs → listen; SIGTERM/SIGINT shut down cleanly.
async function main(): Promise<void> {
  let runtime;
  let dbLock;
  try {
    const config = loadConfig();
    requireSharedVaultKey(config);
    if (config.databaseUrl) {
      // PostgreSQL: the migrations are applied by one start at a time (an advisory lock), before anything runs.
      await applyPgMigrations(config.databaseUrl).catch((e: unknown) => {
        if (e instanceof SchemaTooNewError) throw e;
        const url = config.databaseUrl!;
        const hint = passwordNeedsEncoding(url) ? ' (a password with @, /, ? or # must be percent-encoded in the URL: @ is %40, / is %2F)' : '';
        throw new ConfigError('DATABASE_URL', 'a PostgreSQL server that answers', `${redactedUrl(url)}: ${redactedMessage((e as Error).message, url)}${hint}`);
      });
      dbLock = { release() {} };
    } else {
      // Before the database is opened (and migrated): a second process on the same file stops here.
      dbLock = asSetting('DATABASE_PATH', 'a file path the service can create, read and write', config.databasePath, () => lockDatabase(config.databasePath));
    }
    runtime = createRuntime(config);
    if (config.databaseUrl && process.env.DATABASE_PATH) {
      runtime.logger.warn('DATABASE_URL and DATABASE_PATH are both set: the service runs on PostgreSQL and DATABASE_PATH is ignored');
    }
  } catch (e) {
    stopOn(e);
  }
  const { config, logger } = runtime;
  const { printedKey, bootstrapRefused } = await ensureBootstrapLender(runtime, config.bootstrapApiKey, runtime.clock.now());
  if (bootstrapRefused) {
    // A start-up error like any bad setting: one line naming it and what to do, and no service that silently
    // lacks the key it was told to accept.
    console.error(
      `Invalid configuration: BOOTSTRAP_API_KEY was not registered: ${bootstrapRefused}. Revoke a key it no longer uses (bun run cli key list default, then bun run cli key revoke PREFIX) and start again, or unset BOOTSTRAP_API_KEY.`,
    );
    runtime.handle.close();
    dbLock.release();
    process.exit(2);
  }

  await releaseStaleClaims(runtime);
  // After a database outage the jobs let go of this replica's unfinished claims, as the start does, before claiming again.
  const jobs = new JobRunner(runtime, featureJobs(runtime), { afterOutage: () => releaseStaleClaims(runtime) });
  const app = createApp(runtime, { jobs });
  let tls: { cert: string; key: string } | undefined;
  try {
    tls = config.tlsCertFile
      ? {
          cert: asSetting('TLS_CERT_FILE', 'a readable PEM certificate file', config.tlsCertFile, () => readFileSync(config.tlsCertFile!, 'utf8')),
          key: asSetting('TLS_KEY_FILE', 'a readable PEM key file', config.tlsKeyFile!, () => readFileSync(config.tlsKeyFile!, 'utf8')),
        }
      : undefined;
  } catch (e) {
    stopOn(e);
  }
  // Bun answers requests past its header limit (16 KB by default) itself, with no body and no request id;
  // above the gate's own limits (http/limits.ts) those are refused with the envelope instead.
  (http as { maxHeaderSize: number }).maxHeaderSize = SERVER_HEADER_CEILING_BYTES;
  try {
    app.listen({ port: config.port, hostname: config.host, tls });
  } catch (e) {
    const code = (e as { code?: string }).code;
    stopOn(
      code === 'EADDRINUSE'
        ? new ConfigError('PORT', `a port free on ${config.host} (another process listens on it; stop it or choose another PORT)`, String(config.port))
        : code === 'EACCES'
          ? new ConfigError('PORT', 'a port this user may listen on (1024 and above, unless the process may bind low ports)', String(config.port))
          : // TLS files that are readable but not a certificate and its key are the other way listen fails at start.
            config.tlsCertFile
            ? new ConfigError('TLS_CERT_FILE', `a PEM certificate and TLS_KEY_FILE its key (${(e as Error).message.split('\n')[0]!.slice(0, 200)})`, config.tlsCertFile)
            : e,
    );
  }
  jobs.start();
  const checkpointer = config.databaseUrl || config.databasePath === ':memory:' ? null : startCheckpointer(runtime.sqlite, config.databasePath, logger);

  const url = baseUrl({ ...config, port: app.server?.port ?? config.port });
  logger.info(
    { port: app.server?.port, vault_key_created: runtime.vaultKeyCreated, engine: runtime.engine.name, database: runtime.pg?.where, replica: config.replicaId },
    'listening',
  );
  // Plain lines for the person who just started it; the key is shown once and never again.
  console.log(`Service listening on ${url}  (API docs: ${url}/docs)`);
  if (printedKey) {
    console.log(`Created lender "default". Its API key, shown only this once:\n  ${printedKey}`);
  }

  // A stop takes at most SHUTDOWN_GRACE_MS: no new connections; requests and job steps in flight get the
  // grace minus a reserve (webhook requests are cut at once and stay due); then whatever is still open (a
  // slow upload, a slow client) is cut, the WAL is checkpointed and the process exits 0. Every write is a
  // committed transaction, so cutting loses nothing; claims left behind are released at the next start.
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const grace = config.shutdownGraceMs;
    const deadline = Date.now() + grace;
    const reserve = Math.min(2_000, Math.floor(grace / 4));
    const until = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms - Date.now())));
    // The last resort, should closing itself hang: the grace is a promise to whoever sent the signal.
    setTimeout(() => {
      logger.warn({ grace_ms: grace }, 'stop took the whole grace period; exiting');
      process.exit(0);
    }, grace).unref();
    logger.info({ signal, grace_ms: grace }, 'shutting down');
    const draining = app.server?.stop(false) ?? Promise.resolve();
    const jobsStopped = jobs.stop();
    const finished = await Promise.race([Promise.all([draining, jobsStopped]).then(() => true), until(deadline - reserve).then(() => false)]);
    if (!finished) logger.warn('requests or jobs still running at the end of the grace period: cut');
    await app.server?.stop(true);
    // The provider calls counted since the last flush, so a clean stop loses none of the lenders' usage.
    await Promise.race([writeProviderCalls(runtime).catch(() => undefined), until(deadline - 200)]);
    await Promise.race([checkpointer?.stop(), until(deadline - 100)]);
    runtime.handle.close();
    await runtime.pg?.close();
    dbLock.release();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

await main();
