import type { PreflightCheck } from './step-kind.js';

/** A prerequisite that is there. */
export const pass = (name: string, detail: string): PreflightCheck => ({ name, ok: true, detail, fix: null });

/** A prerequisite that is not, and what to do about it. */
export const missing = (name: string, detail: string, fix: string): PreflightCheck => ({ name, ok: false, detail, fix });

/** "step run" / "steps run, run-codex": which steps a check is for. */
export const stepList = (names: readonly string[]): string => `step${names.length === 1 ? '' : 's'} ${names.join(', ')}`;

const GiB = 1024 ** 3;

/** Bytes as doctor prints them: GiB from one GiB up, MiB below. */
export function formatBytes(n: number): string {
  return n >= GiB ? `${(n / GiB).toFixed(1)} GiB` : `${Math.round(n / 1024 ** 2)} MiB`;
}
