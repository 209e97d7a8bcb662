import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly jobRuns = new Counter({
    name: 'job_runs_total',
    help: 'Job ticks by job and outcome',
    labelNames: ['job', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly jobDuration = new Histogram({
    name: 'job_duration_seconds',
    help: 'Job tick duration',
    labelNames: ['job'] as const,
    buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
    registers: [this.registry],
  });
  readonly webhookAttempts = new Counter({
    name: 'webhook_attempts_total',
    help: 'Webhook delivery attempts by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly webhookFinal = new Counter({
    name: 'webhook_deliveries_finished_total',
    help: 'Webhook deliveries that reached a final state',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly balanceReads = new Counter({
    name: 'balance_reads_total',
    help: 'Balance reads by export status',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly paymentsInitiated = new Counter({
    name: 'payments_initiated_total',
    help: 'Payments the collection decided to initiate, by rail',
    labelNames: ['rail'] as const,
    registers: [this.registry],
  });
  readonly paymentsSent = new Counter({
    name: 'payments_sent_total',
    help: 'Payment creations this process sent to a processor after claiming them (a re-send with the same key counts again), by processor',
    labelNames: ['processor'] as const,
    registers: [this.registry],
  });
  readonly linkProbes = new Counter({
    name: 'bank_link_probes_total',
    help: 'Probes of linked accounts with an open health episode, by provider and the health the provider answered',
    labelNames: ['provider', 'health'] as const,
    registers: [this.registry],
  });
  readonly paymentsScheduled = new Counter({
    name: 'payments_scheduled_total',
    help: 'Payments scheduled after a notice period (the borrower is to be told), by rail',
    labelNames: ['rail'] as const,
    registers: [this.registry],
  });
  readonly paymentsSkipped = new Counter({
    name: 'payments_skipped_total',
    help: 'Payments not initiated or not sent, by reason (no_processor_key, return_rate_paused, removed, key_deleted, no_card_token, absent_at_processor)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly paymentEvents = new Counter({
    name: 'payment_events_total',
    help: 'Payment events recorded, by status (settled, returned, ...) and source',
    labelNames: ['status', 'source'] as const,
    registers: [this.registry],
  });
  readonly paymentReports = new Counter({
    name: 'payment_reports_total',
    help: "Uploaded outcomes of the service's own payments kept as the lender's report until the processor confirms them: asked (a look-up queued) or held (the processor cannot be asked)",
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly paymentObservationsStale = new Counter({
    name: 'payment_observations_stale_total',
    help: 'Observed payment statuses not ahead of the recorded one (kept out: a status only moves forward), by source',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });
  readonly paymentObservationsSetAside = new Counter({
    name: 'payment_observations_set_aside_total',
    help: 'Observed payment statuses that could not be recorded and were set aside (payment_observations_set_aside), by source',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });
  readonly paymentsReconciled = new Counter({
    name: 'payments_reconciled_total',
    help: 'Payment statuses found by listing a processor\'s payments that its change feed had not given, by processor and status',
    labelNames: ['processor', 'status'] as const,
    registers: [this.registry],
  });
  readonly achReturnRate = new Gauge({
    name: 'ach_return_rate',
    help: 'ACH returns over debits in the last 60 days as last evaluated, by lender id and class (unauthorized, administrative, overall)',
    labelNames: ['lender', 'class'] as const,
    registers: [this.registry],
  });
  readonly achDebitsWindow = new Gauge({
    name: 'ach_debits_window',
    help: 'ACH debits that went to the bank in the last 60 days as last evaluated, by lender id',
    labelNames: ['lender'] as const,
    registers: [this.registry],
  });
  readonly providerCalls = new Counter({
    name: 'provider_calls_total',
    help: 'Requests sent to bank-data and payment providers, by lender id (empty for a call made for no lender), provider and endpoint',
    labelNames: ['lender', 'provider', 'endpoint'] as const,
    registers: [this.registry],
  });
  readonly bankDataCalls = new Counter({
    name: 'bank_data_calls_total',
    help: 'Requests to bank-data providers (plaid, stripe, http) by how they ended: ok, refused (4xx), rate_limited (429), server_error (5xx), timeout, unreachable',
    labelNames: ['provider', 'endpoint', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly processorCalls = new Counter({
    name: 'processor_calls_total',
    help: 'Requests to payment processors by how they ended: ok, refused (4xx, a card decline included), rate_limited (429), server_error (5xx), timeout, unreachable',
    labelNames: ['processor', 'endpoint', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly pollFailures = new Counter({
    name: 'processor_poll_failures_total',
    help: 'Reads of a processor key that failed, by processor',
    labelNames: ['processor'] as const,
    registers: [this.registry],
  });

  private queueDepthSource: () => Promise<number> = async () => 0;
  /** Read at each scrape from the source the composition root sets (the platform knows no feature's tables). */
  readonly queueDepth: Gauge = new Gauge({
    name: 'balance_queue_authorizers',
    help: 'Authorizers accepted and not yet checked, all lenders',
    registers: [this.registry],
    collect: async (): Promise<void> => this.queueDepth.set(await this.currentQueueDepth()),
  });

  setQueueDepthSource(source: () => Promise<number>): void {
    this.queueDepthSource = source;
  }

  currentQueueDepth(): Promise<number> {
    return this.queueDepthSource();
  }

  private bypassSource: () => number = () => 0;
  readonly writeGateBypassed: Gauge = new Gauge({
    name: 'db_write_gate_bypassed_total',
    help: 'Main-thread writes that did not wait for the write gate while a worker held the write lock (they waited on SQLite instead); 0 unless a code path forgot the gate',
    registers: [this.registry],
    collect: (): void => this.writeGateBypassed.set(this.bypassSource()),
  });

  private heldSource: () => boolean = () => false;
  readonly writeGateHeld: Gauge = new Gauge({
    name: 'db_write_gate_held',
    help: '1 while the upload worker holds the write lock (other writes wait for it), else 0',
    registers: [this.registry],
    collect: (): void => this.writeGateHeld.set(this.heldSource() ? 1 : 0),
  });

  setWriteGateSources(bypassed: () => number, held: () => boolean): void {
    this.bypassSource = bypassed;
    this.heldSource = held;
  }

  constructor(opts: { defaults?: boolean } = {}) {
    if (opts.defaults !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** What a worker's own registry counted, added to this one: counters add up, labelled gauges are set. */
  merge(snapshot: { name: string; type: string; values: { value: number; labels: Record<string, string | number> }[] }[]): void {
    for (const m of snapshot) {
      const mine = this.registry.getSingleMetric(m.name);
      if (!mine) continue;
      for (const v of m.values) {
        if (m.type === 'counter' && v.value > 0) (mine as Counter).inc(v.labels, v.value);
        else if (m.type === 'gauge' && Object.keys(v.labels).length > 0) (mine as Gauge).set(v.labels, v.value);
      }
    }
  }
}
