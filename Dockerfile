# Debit recovery and balance monitoring service.
#
#   docker build -t debit-recovery .
#   docker run -p 3000:3000 -v drs-data:/app/db/data debit-recovery
#
# The database and the vault key live in the /app/db/data volume: keep it (and back it up). On the first
# start with an empty volume the service prints the default lender's API key once (see `docker logs`).
# Plain HTTP is served to loopback only: put a TLS proxy in front (TRUST_PROXY=<its address>), mount a certificate
# (TLS_CERT_FILE/TLS_KEY_FILE), or set ALLOW_INSECURE_HTTP=true on a private network.
# Requests published with -p arrive from the bridge gateway, not loopback: to try the image locally, run
#   docker run -d --name drs -p 127.0.0.1:3000:3000 -v drs-data:/app/db/data -e ALLOW_INSECURE_HTTP=true debit-recovery
# The operator CLI runs inside the container: docker exec drs bun run cli key create default
# HOST is 0.0.0.0 here (the container's own network); outside the image the service listens on loopback.
# On PostgreSQL (-e DATABASE_URL=postgres://…) pass -e VAULT_KEY=… too, the same key to every replica: the service
# refuses to start without it (a key file made in each container's volume would give each replica its own).

ARG BUN_VERSION=1.4.5

# ---- dependencies (production only; swagger-ui-dist is one: /docs serves its assets) ----
FROM oven/bun:${BUN_VERSION}-slim AS deps
WORKDIR /app
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile --production \
    && test -f node_modules/swagger-ui-dist/swagger-ui-bundle.js

# ---- runtime ----
FROM oven/bun:${BUN_VERSION}-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_PATH=/app/db/data/service.sqlite \
    VAULT_KEY_FILE=/app/db/data/vault.key

# Code and migrations are root-owned and read-only for the service user; only the data folder is writable.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
COPY db/schema ./db/schema
COPY db/migrations ./db/migrations
COPY db/schema-pg ./db/schema-pg
COPY db/migrations-pg ./db/migrations-pg
COPY scripts ./scripts

# The base image ships an unprivileged `bun` user (uid 1000).
RUN mkdir -p /app/db/data && chown bun:bun /app/db/data && chmod 0700 /app/db/data
USER bun
VOLUME /app/db/data

EXPOSE 3000
# No curl in slim images: bun itself asks /healthz (exempt from the HTTPS rule; self-signed TLS accepted).
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["bun", "-e", "const s=process.env.TLS_CERT_FILE?'https':'http';fetch(s+'://127.0.0.1:'+(process.env.PORT||3000)+'/healthz',{tls:{rejectUnauthorized:false}}).then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"]

# Exec form, the server process itself (not `bun run start`, whose wrapper would take the signals): bun is
# PID 1, receives SIGTERM, checkpoints the WAL and exits 0 within SHUTDOWN_GRACE_MS.
CMD ["bun", "src/index.ts"]
