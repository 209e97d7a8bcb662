import type { FraudAction, FraudRule } from '../../../db/schema/enums';
import { InvalidInput } from '../../platform/errors';
import { RULES, RULE_IDS } from './rules';

// The lender's fraud-monitoring policy as the rules read it: per rule, on or off, its action, its settings.
// Every rule is on with its defaults until the lender says otherwise (version 0). A version's document is
// stored whole, so a later version of the service that adds a rule or a setting reads an old document with
// that rule's or setting's default.

export interface RulePolicy {
  enabled: boolean;
  action: FraudAction;
  settings: Record<string, number>;
}
export type PolicyRules = Record<FraudRule, RulePolicy>;

/** A lender's policy in force: its version (0: never saved, every default) and its rules. */
export interface FraudPolicy {
  version: number;
  rules: PolicyRules;
}

const defaultsOf = (rule: FraudRule): RulePolicy => ({
  enabled: true,
  action: RULES[rule].defaultAction,
  settings: Object.fromEntries(Object.entries(RULES[rule].settings).map(([k, s]) => [k, s.default])),
});

export const defaultRules = (): PolicyRules => Object.fromEntries(RULE_IDS.map((r) => [r, defaultsOf(r)])) as PolicyRules;

export const DEFAULT_FRAUD_POLICY: FraudPolicy = { version: 0, rules: defaultRules() };

/** A stored document's rules, each rule and setting it lacks at its default. */
export function storedRules(json: string): PolicyRules {
  const stored = JSON.parse(json) as Partial<Record<string, Partial<RulePolicy>>>;
  return Object.fromEntries(
    RULE_IDS.map((r) => {
      const d = defaultsOf(r);
      const s = stored[r];
      return [r, s ? { enabled: s.enabled ?? d.enabled, action: s.action ?? d.action, settings: { ...d.settings, ...(s.settings ?? {}) } } : d];
    }),
  ) as PolicyRules;
}

/** What a lender sends for one rule (the route's schema has checked the shape). */
export interface RuleInput {
  enabled?: boolean;
  action?: FraudAction;
  settings?: Record<string, number>;
}

/**
 * The rules of a new version from what the lender sent: each rule named takes what it gives, the rest of it at
 * its defaults; a rule not named is at its defaults. An action the rule does not take, an unknown setting or
 * one out of its bounds is refused, naming the field.
 */
export function rulesFrom(input: Partial<Record<FraudRule, RuleInput>>): PolicyRules {
  const out = defaultRules();
  for (const rule of RULE_IDS) {
    const given = input[rule];
    if (!given) continue;
    const spec = RULES[rule];
    const at = `/rules/${rule}`;
    if (given.action !== undefined && !spec.actions.includes(given.action)) {
      throw InvalidInput.field(`${at}/action`, `${rule} takes the action ${spec.actions.join(' or ')}`, `Send ${spec.actions.join(' or ')}`);
    }
    const settings = { ...out[rule].settings };
    for (const [name, value] of Object.entries(given.settings ?? {})) {
      const s = spec.settings[name];
      if (!s) throw InvalidInput.field(`${at}/settings/${name}`, `${rule} has no setting ${name}`, Object.keys(spec.settings).length > 0 ? `Its settings: ${Object.keys(spec.settings).join(', ')}` : `${rule} has no settings`);
      if (!Number.isInteger(value) || value < s.minimum || value > s.maximum) {
        throw InvalidInput.field(`${at}/settings/${name}`, `${name} must be a whole number from ${s.minimum} to ${s.maximum}`);
      }
      settings[name] = value;
    }
    out[rule] = { enabled: given.enabled ?? true, action: given.action ?? spec.defaultAction, settings };
  }
  return out;
}
