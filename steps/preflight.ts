import type { PreflightCheck } from '../pipeline/step-kind.js';

/** A prerequisite that is there. */
export const pass = (name: string, detail: string): PreflightCheck => ({ name, ok: true, detail, fix: null });

/** A prerequisite that is not, and what to do about it. */
export const missing = (name: string, detail: string, fix: string): PreflightCheck => ({ name, ok: false, detail, fix });

/** "step run" / "steps run, run-codex": which steps a check is for. */
export const stepList = (names: readonly string[]): string => `step${names.length === 1 ? '' : 's'} ${names.join(', ')}`;
