import type { FieldProblem } from '../../platform/errors';
import { AUTHORIZER_FIELDS, checkObject, type FieldSpec } from './fields';
import { validateAuthorizers, type AuthorizerCandidate, type FailedAuthorizer, type NormalizedAuthorizer } from './rules';

/**
 * Reads a submitted list of authorizers in one pass: each authorizer's shape is checked field by field
 * as its values are collected (`problems`: structural, the whole request is refused), then its rules run on
 * the collected values (`failed`: that authorizer alone is refused). `extraFields` adds what a feature
 * accepts beyond the identity fields (a schedule's threshold_amount, an enrollment's amount).
 */
export function readAuthorizerList(
  raw: unknown,
  path: string,
  opts: {
    min: number;
    max: number;
    extraFields?: Record<string, FieldSpec>;
    debitCardsApproved: boolean;
    now: number;
  },
): { problems: FieldProblem[]; accepted: NormalizedAuthorizer[]; failed: FailedAuthorizer[]; candidates: AuthorizerCandidate[] } {
  const problems: FieldProblem[] = [];
  if (raw === undefined) {
    problems.push({ path, message: `${path.split('/').pop()} is required` });
    return { problems, accepted: [], failed: [], candidates: [] };
  }
  if (!Array.isArray(raw)) {
    problems.push({ path, message: 'Expected an array of authorizers' });
    return { problems, accepted: [], failed: [], candidates: [] };
  }
  if (raw.length < opts.min || raw.length > opts.max) {
    problems.push({ path, message: `Expected ${opts.min} to ${opts.max} authorizers; got ${raw.length}` });
    return { problems, accepted: [], failed: [], candidates: [] };
  }
  const fields = opts.extraFields ? { ...AUTHORIZER_FIELDS, ...opts.extraFields } : AUTHORIZER_FIELDS;
  const candidates: AuthorizerCandidate[] = new Array(raw.length);
  const required = ['authorizer_unique_id'];
  for (let i = 0; i < raw.length; i++) {
    candidates[i] = checkObject(fields, required, raw[i], path + '/' + i, problems) as unknown as AuthorizerCandidate;
  }
  if (problems.length > 0) return { problems, accepted: [], failed: [], candidates: [] };
  const { accepted, failed } = validateAuthorizers(
    candidates.map((candidate, i) => ({ candidate, rowNumber: i + 1 })),
    { debitCardsApproved: opts.debitCardsApproved, now: opts.now },
  );
  return { problems, accepted, failed, candidates };
}
