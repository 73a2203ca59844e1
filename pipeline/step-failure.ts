/**
 * Why a node failed: one case per reason, with what that reason knows (the exit code, the output
 * that is missing, the blob that was corrupt). `message` is what the user reads. A consumer that
 * treats reasons differently switches over `reason` and closes the switch with `unreachable`, so
 * a new reason is a compile error wherever it must be handled.
 */
import type { Sha256 } from './digest.js';
import { err, ok, unreachable, type Result } from './result.js';

export type StepFailure =
  /** A process the step ran exited non-zero or was killed by a signal (null: not known). */
  | { reason: 'exit-non-zero'; message: string; exit_code: number | null; signal: string | null }
  | { reason: 'timeout'; message: string; after_seconds: number }
  /** An output the step declares, or one it reads of an upstream (`upstream`), is not there. */
  | { reason: 'missing-output'; message: string; output: string; upstream: string | null }
  | { reason: 'spawn-error'; message: string }
  | { reason: 'killed'; message: string }
  /** An input changed between the plan and the execution (a file, a base image). */
  | { reason: 'input-changed'; message: string; input: string }
  /**
   * A stored blob the step read did not match its digest: not this node's failure. The engine
   * dropped it with the records that need it and rebuilds its producer, then this node.
   */
  | { reason: 'corrupt-blob'; message: string; digest: Sha256 }
  | { reason: 'store-error'; message: string }
  | { reason: 'infra'; message: string }
  | { reason: 'refused'; message: string }
  | { reason: 'internal'; message: string };

export type FailureReason = StepFailure['reason'];

/**
 * Whether the failure is the node's own, kept in its history (`status`, `explain`, the next
 * plan's reason): a corrupt blob is its producer's, and an interrupt is nobody's.
 */
export function isOwnFailure(f: StepFailure): boolean {
  switch (f.reason) {
    case 'corrupt-blob':
    case 'killed':
      return false;
    case 'exit-non-zero':
    case 'timeout':
    case 'missing-output':
    case 'spawn-error':
    case 'input-changed':
    case 'store-error':
    case 'infra':
    case 'refused':
    case 'internal':
      return true;
    default:
      return unreachable(f);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const nullOr = <T>(v: unknown, is: (x: unknown) => x is T): v is T | null => v === null || is(v);
const isString = (x: unknown): x is string => typeof x === 'string';
const isNumber = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/**
 * A failure that travelled as JSON (a worker's job result through the queue), checked case by
 * case: its reason must be one of these and carry that reason's data.
 */
export function parseStepFailure(v: unknown): Result<StepFailure, string> {
  if (!isObject(v) || !isString(v['reason']) || !isString(v['message'])) return err('a failure must be {reason, message, ...}');
  const message = v['message'];
  const f = v as { reason: FailureReason } & Record<string, unknown>;
  const bad = (field: string) => err(`a ${f.reason} failure needs ${field}`);
  switch (f.reason) {
    case 'exit-non-zero':
      return nullOr(f['exit_code'], isNumber) && nullOr(f['signal'], isString)
        ? ok({ reason: f.reason, message, exit_code: f['exit_code'], signal: f['signal'] })
        : bad('exit_code and signal (each null when not known)');
    case 'timeout':
      return isNumber(f['after_seconds']) ? ok({ reason: f.reason, message, after_seconds: f['after_seconds'] }) : bad('after_seconds');
    case 'missing-output':
      return isString(f['output']) && nullOr(f['upstream'], isString)
        ? ok({ reason: f.reason, message, output: f['output'], upstream: f['upstream'] })
        : bad('output and upstream');
    case 'input-changed':
      return isString(f['input']) ? ok({ reason: f.reason, message, input: f['input'] }) : bad('input');
    case 'corrupt-blob':
      return isString(f['digest']) && /^[0-9a-f]{64}$/.test(f['digest']) ? ok({ reason: f.reason, message, digest: f['digest'] as Sha256 }) : bad('digest');
    case 'spawn-error':
    case 'killed':
    case 'store-error':
    case 'infra':
    case 'refused':
    case 'internal':
      return ok({ reason: f.reason, message });
    default:
      return err(`unknown failure reason ${JSON.stringify((f as { reason: unknown }).reason)}`);
  }
}
