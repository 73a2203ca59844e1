/** The configuration an arm ran with, and the checks that refuse a comparison. */
import type { ArmConfig, ArmMetrics, AttemptRecord, ComparisonProblem, ConfigField } from './types.js';

/** Fields whose difference between arms refuses a comparison (and whose mixture within an arm does). */
export const REFUSING_FIELDS: readonly ConfigField[] = [
  'model',
  'provider',
  'adapter',
  'adapter_version',
  'sandbox_backend',
  'isolation',
  'egress_mode',
  'egress_enforced',
  'image_id',
  'resources',
];

const FIELD_LABEL: Record<ConfigField, string> = {
  model: 'agent model',
  provider: 'provider',
  adapter: 'agent adapter',
  adapter_version: 'adapter version',
  sandbox_backend: 'sandbox backend',
  isolation: 'sandbox isolation',
  egress_mode: 'egress mode',
  egress_enforced: 'egress enforcement',
  image_id: 'image id',
  resources: 'sandbox resources',
};

function resourcesText(r: AttemptRecord['sandbox']['resources']): string {
  const v = (x: number | null): string => (x === null ? 'unset' : String(x));
  return `cpus=${v(r.cpus)} memory_mb=${v(r.memory_mb)} pids=${v(r.pids)}`;
}

/** From the accepted attempts (an infra failure may not have reached the image); all attempts when none was accepted. */
export function armConfig(attempts: readonly AttemptRecord[]): ArmConfig {
  const accepted = attempts.filter((a) => a.admission === 'accepted');
  const source = accepted.length > 0 ? accepted : attempts;
  const values = (pick: (a: AttemptRecord) => string): string[] => [...new Set(source.map(pick))].sort();
  return {
    adapter: values((a) => a.agent.adapter),
    adapter_version: values((a) => a.agent.version),
    model: values((a) => a.agent.model),
    provider: values((a) => a.agent.provider),
    sandbox_backend: values((a) => a.sandbox.backend),
    isolation: values((a) => a.sandbox.isolation),
    egress_mode: values((a) => a.sandbox.egress_mode),
    egress_enforced: values((a) => String(a.sandbox.egress_enforced)),
    image_id: values((a) => a.sandbox.image_id ?? 'none'),
    resources: values((a) => resourcesText(a.sandbox.resources)),
  };
}

const list = (xs: readonly string[]): string => xs.join(', ');

/**
 * Reasons to refuse comparing `others` against `base`: a field mixed within an
 * arm, a field that differs between arms, or infra-error rates further apart
 * than the threshold.
 */
export function refusalProblems(
  base: ArmMetrics,
  others: readonly ArmMetrics[],
  infraThreshold: number,
  crossed: readonly ConfigField[] = [],
): ComparisonProblem[] {
  const problems: ComparisonProblem[] = [];
  for (const arm of [base, ...others]) {
    for (const field of REFUSING_FIELDS) {
      const values = arm.config[field];
      if (values.length > 1) {
        problems.push({
          reason: 'mixed-config',
          arm: arm.arm,
          field,
          values,
          message: `arm "${arm.arm}" ran with more than one ${FIELD_LABEL[field]}: ${list(values)}`,
        });
      }
    }
  }
  for (const other of others) {
    for (const field of REFUSING_FIELDS.filter((f) => !crossed.includes(f))) {
      const a = base.config[field];
      const b = other.config[field];
      if (a.length === 1 && b.length === 1 && a[0] !== b[0]) {
        problems.push({
          reason: 'config-mismatch',
          field,
          control: a,
          treatment: b,
          message: `arms differ in ${FIELD_LABEL[field]}: "${base.arm}" ran ${list(a)}, "${other.arm}" ran ${list(b)}`,
        });
      }
    }
    const ra = base.infra_error_rate;
    const rb = other.infra_error_rate;
    if (ra !== null && rb !== null) {
      const p = fisherExactP(base.n_infra_errors, base.n_tries - base.n_infra_errors, other.n_infra_errors, other.n_tries - other.n_infra_errors);
      if (p < infraThreshold) {
        problems.push({
          reason: 'infra-error-rate',
          control_rate: ra,
          treatment_rate: rb,
          difference: Math.abs(rb - ra),
          p,
          threshold: infraThreshold,
          message:
            `infrastructure-error rates differ (Fisher exact p=${p.toPrecision(3)} < ${infraThreshold}): ` +
            `"${base.arm}" ${pct(ra)} (${base.n_infra_errors} of ${base.n_tries} tries), "${other.arm}" ${pct(rb)} (${other.n_infra_errors} of ${other.n_tries} tries)`,
        });
      }
    }
  }
  return problems;
}

/**
 * Fisher's exact two-sided test of a 2x2 table [[a, b], [c, d]]: the probability, with the
 * margins fixed, of a table at most as likely as the observed one.
 */
export function fisherExactP(a: number, b: number, c: number, d: number): number {
  const n = a + b + c + d;
  const row1 = a + b;
  const col1 = a + c;
  const logFact = new Float64Array(n + 1);
  for (let i = 2; i <= n; i++) logFact[i] = logFact[i - 1]! + Math.log(i);
  const logP = (x: number) =>
    logFact[row1]! +
    logFact[n - row1]! +
    logFact[col1]! +
    logFact[n - col1]! -
    logFact[n]! -
    logFact[x]! -
    logFact[row1 - x]! -
    logFact[col1 - x]! -
    logFact[n - row1 - col1 + x]!;
  const observed = logP(a);
  let p = 0;
  for (let x = Math.max(0, row1 + col1 - n); x <= Math.min(row1, col1); x++) {
    const lp = logP(x);
    if (lp <= observed + 1e-9) p += Math.exp(lp);
  }
  return Math.min(1, p);
}

/** Arms whose accepted fraction is under the validity floor. */
export function validityProblems(arms: readonly ArmMetrics[], floor: number): ComparisonProblem[] {
  const problems: ComparisonProblem[] = [];
  for (const arm of arms) {
    const f = arm.accepted_fraction;
    if (f !== null && f < floor - 1e-12) {
      problems.push({
        reason: 'below-validity-floor',
        arm: arm.arm,
        accepted_fraction: f,
        floor,
        message: `arm "${arm.arm}" has ${pct(f)} of its attempts accepted, under the validity floor of ${pct(floor)}`,
      });
    }
  }
  return problems;
}

export function pct(x: number): string {
  return `${Number((x * 100).toPrecision(3))}%`;
}
