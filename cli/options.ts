/**
 * Every option pairbench knows, declared once: whether it takes a value, its short letter, and
 * what a valid value is. Commands say which of them they take (cli/commands/*.ts); the parser
 * (command-line.ts) and each --help (help.ts) are made from that.
 */
import { parseDuration, parseSize } from '../pipeline/config/load.js';
import { failOnProblem } from '../stats/verdicts.js';

interface OptionSpec {
  value: boolean;
  short?: string;
  /** What is wrong with a given value, in words (absent: any value). */
  check?: (value: string) => string | undefined;
}

const PROGRESS_MODES = ['auto', 'plain', 'none'];

export const OPTIONS = {
  config: { value: true, short: 'c' },
  store: { value: true },
  json: { value: false },
  help: { value: false, short: 'h' },
  jobs: {
    value: true,
    short: 'j',
    check: (v) => (Number.isInteger(Number(v)) && Number(v) >= 1 ? undefined : `--jobs takes a whole number >= 1, not "${v}"`),
  },
  verbose: { value: false, short: 'v' },
  progress: { value: true, check: (v) => (PROGRESS_MODES.includes(v) ? undefined : `--progress takes auto, plain or none, not "${v}"`) },
  all: { value: false, short: 'a' },
  'max-size': {
    value: true,
    check: (v) => (Number.isNaN(parseSize(v)) ? `--max-size takes a size with its unit, such as 500MB, 2GiB or 4096B, not "${v}"` : undefined),
  },
  'dry-run': { value: false, short: 'n' },
  'keep-newer-than': {
    value: true,
    check: (v) => (Number.isNaN(parseDuration(v)) ? `--keep-newer-than takes a duration with its unit, such as 30m, 2h or 0s, not "${v}"` : undefined),
  },
  'if-idle': { value: false },
  repo: { value: true },
  commit: { value: true },
  seed: { value: true },
  count: { value: true },
  language: { value: true },
  'test-command': { value: true },
  out: { value: true },
  'add-to': { value: true },
  'fake-model': { value: false },
  repeats: { value: true },
  repair: { value: false },
  sign: { value: true },
  'harbor-layout': { value: false },
  public: { value: false },
  private: { value: false },
  key: { value: true },
  root: { value: true },
  'skip-canary': { value: false },
  'acknowledge-reset': { value: false },
  list: { value: false, short: 'l' },
  shard: { value: true },
  'remote-cache': { value: true },
  'ignore-config-cache': { value: false },
  'cache-auth-env': {
    value: true,
    check: (v) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(v) ? undefined : `--cache-auth-env takes the name of an environment variable, not "${v}"`),
  },
  'read-store': { value: true },
  'cache-mode': { value: true },
  executor: { value: true },
  'fail-on': { value: true, check: (v) => failOnProblem(v) },
  redis: { value: true },
  concurrency: { value: true },
  port: { value: true, check: (v) => (/^\d+$/.test(v) && Number(v) <= 65535 ? undefined : `--port takes a port number (0-65535), not "${v}"`) },
  host: { value: true },
  html: { value: true },
  base: { value: true },
  'base-missing': { value: true },
  review: { value: true },
  link: { value: true },
  'base-label': { value: true },
  'head-label': { value: true },
  detect: { value: true },
  margin: { value: true },
  baseline: { value: true },
  'cost-per-attempt': { value: true },
  redraw: { value: false },
  relock: { value: false },
} as const satisfies Record<string, OptionSpec>;
export type OptionName = keyof typeof OPTIONS;

export function isOptionName(name: string): name is OptionName {
  return Object.hasOwn(OPTIONS, name);
}

/** Parsed option values: a string for an option that takes one, true for a flag. */
export type OptionValues = { [K in OptionName]?: (typeof OPTIONS)[K]['value'] extends true ? string : boolean };

/** The first given option whose value is not valid, in words. */
export function optionValueProblem(values: OptionValues): string | undefined {
  for (const [name, spec] of Object.entries(OPTIONS) as [OptionName, OptionSpec][]) {
    const given = values[name];
    if (typeof given === 'string' && spec.check) {
      const problem = spec.check(given);
      if (problem) return problem;
    }
  }
  return undefined;
}
