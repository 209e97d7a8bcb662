// Answers from the outside world read with a bound on their size: the Content-Length first, then the bytes as
// they arrive, the body let go of as soon as it passes the bound. A 200 MB answer to a credential check once
// added 400 MB to the process, and a 100 MB balance answer 197 MB; every provider answer now has a documented
// limit, and one past it is a failed call, never read whole.

/** A balance or a credential check: a few kilobytes in practice. */
export const ANSWER_LIMIT_BYTES = 1024 * 1024;
/** A page of transactions or of a processor's list: a few hundred kilobytes in practice. */
export const PAGE_LIMIT_BYTES = 10 * 1024 * 1024;

/** The reason a read names when its answer passed the bound. */
export const ANSWER_TOO_LARGE = 'answer_too_large';

export class AnswerTooLarge extends Error {
  constructor(readonly limitBytes: number) {
    super(`the answer is larger than ${limitBytes} bytes`);
    this.name = 'AnswerTooLarge';
  }
}

/** The body of `res` as text, at most `limitBytes` bytes of it; AnswerTooLarge past that (the rest is not read). */
export async function boundedText(res: Response, limitBytes: number): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limitBytes) {
    void res.body?.cancel().catch(() => undefined);
    throw new AnswerTooLarge(limitBytes);
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limitBytes) {
      void reader.cancel().catch(() => undefined);
      throw new AnswerTooLarge(limitBytes);
    }
    parts.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(parts));
}

/**
 * A fetch whose answers are read with the bound before they are handed on (the Stripe SDK's HTTP client takes
 * a fetch): a larger one is refused as a network failure, which the callers already treat as one.
 */
export function boundedFetch(limitBytes: number): typeof fetch {
  const f = async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const res = await fetch(input, init);
    const text = await boundedText(res, limitBytes);
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  return Object.assign(f, { preconnect: fetch.preconnect }) as typeof fetch;
}
