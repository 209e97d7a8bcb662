import ky, { HTTPError, TimeoutError } from 'ky';
import { AnswerTooLarge, ANSWER_LIMIT_BYTES, ANSWER_TOO_LARGE, boundedText, PAGE_LIMIT_BYTES } from '../bounded-body';
import { observed, type CallObserver } from '../../platform/provider-calls';
import { fromResponseBody, fromTransactionsBody, toRequestBody, toTransactionsRequestBody } from './http-contract';
import {
  HISTORY_MAX_PAGES,
  boundedCredits,
  type HistoryCredit,
  type HistoryResult,
  type HistoryWindow,
  type TransactionHistorySource,
  type BalanceProvider,
  type BalanceReadRequest,
  type BalanceReadResult,
  OTHER_ERROR_CODE,
  TransientProviderError,
} from './types';

export interface HttpBalanceProviderOptions {
  /** Base URL of the data source; reads go to `${url}/balance`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>`; no header when null. */
  token: string | null;
  /** Per attempt, for the response headers and again for the body. Default 10 s. */
  timeoutMs?: number;
  /** Extra attempts after a 5xx or a network error. Default 2. */
  retries?: number;
  /** First retry delay, doubling after that. Default 300 ms. */
  retryDelayMs?: number;
  /** Told when the provider answers past the size bound. */
  logger?: { warn(obj: object, msg: string): void };
  /**
   * Told of every request as it leaves (`/balance`, `/transactions`) and of how it ended: each attempt of a
   * retried read is a call. A refusal (4xx), the sign of a wrong token or URL, is logged there.
   */
  onCall?: CallObserver;
}

// A 408 or 429 means "not now" rather than "wrong request": not retried here (the provider asked us to back
// off), but reported as transient so the read can be tried again later.
const COME_BACK_LATER = new Set([408, 429]);

function isServerError(error: unknown): boolean {
  return error instanceof HTTPError && error.response.status >= 500;
}

function isRefusal(status: number): boolean {
  return status < 500 && !COME_BACK_LATER.has(status);
}

async function textWithin(res: Response, ms: number, limitBytes: number): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void res.body?.cancel().catch(() => undefined);
      reject(new Error(`response body not received within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([boundedText(res, limitBytes), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Balance reads from an external data source over the JSON contract in docs/bank-data-http.md. */
export class HttpBalanceProvider implements BalanceProvider, TransactionHistorySource {
  private readonly endpoint: string;
  private readonly transactionsEndpoint: string;
  private readonly token: string | null;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly logger: HttpBalanceProviderOptions['logger'];
  private readonly onCall: CallObserver | undefined;

  constructor(opts: HttpBalanceProviderOptions) {
    this.endpoint = `${opts.url.replace(/\/+$/, '')}/balance`;
    this.transactionsEndpoint = `${opts.url.replace(/\/+$/, '')}/transactions`;
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.retries = opts.retries ?? 2;
    this.retryDelayMs = opts.retryDelayMs ?? 300;
    this.logger = opts.logger;
    this.onCall = opts.onCall;
  }

  /** fetch, each request observed under the endpoint's name (never its URL, which may hold a token). */
  private fetchAs(endpoint: string): typeof fetch {
    const f = (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => observed(this.onCall, endpoint, () => fetch(input, init));
    return Object.assign(f, { preconnect: fetch.preconnect }) as typeof fetch;
  }

  async read(req: BalanceReadRequest): Promise<BalanceReadResult> {
    let res: Response;
    try {
      res = await ky.post(this.endpoint, {
        json: toRequestBody(req),
        headers: this.token === null ? {} : { authorization: `Bearer ${this.token}` },
        timeout: this.timeoutMs,
        fetch: this.fetchAs('/balance'),
        // A redirect would carry the bearer token to another address; treat it as a misconfigured URL instead.
        redirect: 'manual',
        retry: {
          limit: this.retries,
          // A balance read changes nothing at the provider, so repeating the POST is safe.
          methods: ['post'],
          // Only outages are retried: a 4xx will not get better by asking again, and a timed-out attempt has
          // already used its whole budget.
          shouldRetry: ({ error }) => {
            if (error instanceof HTTPError) return isServerError(error);
            if (error instanceof TimeoutError) return false;
            return true;
          },
          delay: (attempt) => this.retryDelayMs * 2 ** (attempt - 1),
        },
      });
    } catch (error) {
      if (error instanceof HTTPError && isRefusal(error.response.status)) {
        // The provider rejected the request itself (bad token, contract mismatch, moved URL): asking again
        // cannot help, so the read ends now as "Other error"; the observer's log line tells the operator.
        void error.response.body?.cancel().catch(() => undefined);
        return { kind: 'failed', statusCode: OTHER_ERROR_CODE };
      }
      throw this.transientError(error);
    }

    let text: string;
    try {
      text = await textWithin(res, this.timeoutMs, ANSWER_LIMIT_BYTES);
    } catch (error) {
      // Past its bound the answer is a failed read, not something to ask for again.
      if (error instanceof AnswerTooLarge) {
        this.logger?.warn({ limit_bytes: ANSWER_LIMIT_BYTES }, 'bank-data provider answered a balance read past its size bound');
        return { kind: 'failed', statusCode: OTHER_ERROR_CODE };
      }
      const reason = error instanceof Error ? `: ${error.message}` : '';
      throw new TransientProviderError(`Bank-data provider answer could not be read${reason}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new TransientProviderError(`Bank-data provider answered HTTP ${res.status} with a body that is not JSON`);
    }
    const result = fromResponseBody(json);
    if (result === null) {
      throw new TransientProviderError(
        `Bank-data provider answered HTTP ${res.status} without a valid balance_status_code and balance`,
      );
    }
    return result;
  }

  /**
   * The authorizer's credits over the window, `POST {url}/transactions` a page at a time (at most
   * HISTORY_MAX_PAGES, checked before each page). Not retried here: the caller asks again later. A provider
   * that does not offer transactions (404, 501) has no history; another refusal is logged and has none either.
   */
  async history(req: BalanceReadRequest, window: HistoryWindow): Promise<HistoryResult> {
    const credits: HistoryCredit[] = [];
    let pageToken: string | null = null;
    for (let page = 0; ; page++) {
      if (page >= HISTORY_MAX_PAGES) return { kind: 'credits', credits: boundedCredits(credits), truncated: true };
      let res: Response;
      try {
        res = await ky.post(this.transactionsEndpoint, {
          json: toTransactionsRequestBody(req, window, pageToken),
          headers: this.token === null ? {} : { authorization: `Bearer ${this.token}` },
          timeout: this.timeoutMs,
          fetch: this.fetchAs('/transactions'),
          redirect: 'manual',
          retry: { limit: 0 },
        });
      } catch (error) {
        if (error instanceof HTTPError && isRefusal(error.response.status)) {
          void error.response.body?.cancel().catch(() => undefined);
          const status = error.response.status;
          if (status === 404 || status === 501) return { kind: 'none', detail: 'transactions_not_offered' };
          return { kind: 'none', detail: 'refused' };
        }
        throw this.transientError(error);
      }
      let text: string;
      try {
        text = await textWithin(res, this.timeoutMs, PAGE_LIMIT_BYTES);
      } catch (error) {
        if (error instanceof AnswerTooLarge) return { kind: 'none', detail: ANSWER_TOO_LARGE };
        throw new TransientProviderError(`Bank-data provider transactions could not be read${error instanceof Error ? `: ${error.message}` : ''}`);
      }
      let parsed: ReturnType<typeof fromTransactionsBody>;
      try {
        parsed = fromTransactionsBody(JSON.parse(text));
      } catch {
        parsed = null;
      }
      if (parsed === null) throw new TransientProviderError(`Bank-data provider answered HTTP ${res.status} with transactions outside the contract`);
      credits.push(...parsed.credits);
      if (parsed.nextPageToken === null) return { kind: 'credits', credits: boundedCredits(credits), truncated: false };
      pageToken = parsed.nextPageToken;
    }
  }

  // Built from the status or message only: ky's errors carry the request options, bearer token included, and
  // must not reach a log line through `cause`.
  private transientError(error: unknown): TransientProviderError {
    if (error instanceof HTTPError) {
      void error.response.body?.cancel().catch(() => undefined);
      return new TransientProviderError(`Bank-data provider answered HTTP ${error.response.status}`);
    }
    if (error instanceof TimeoutError) {
      return new TransientProviderError(`Bank-data provider did not answer within ${this.timeoutMs} ms`);
    }
    const reason = error instanceof Error ? `: ${error.message}` : '';
    return new TransientProviderError(`Bank-data provider could not be reached${reason}`);
  }
}
