/** Progress of a long byte-bound command (writing or verifying a large bundle), on stderr. */
export type ProgressMode = 'auto' | 'plain' | 'none';

/** `auto` shows a bar only for bundles this large, on a terminal, outside CI. */
const AUTO_MIN_BYTES = 64 * 1024 * 1024;
const BAR = 30;

interface Err {
  write(s: string): unknown;
  isTTY?: boolean;
}

const mb = (n: number) => (n / 1e6).toFixed(n < 10e6 ? 1 : 0);

/**
 * `plain` prints a line at every tenth of the way (any size: it was asked for); `auto` redraws
 * one bar line on a terminal for a bundle over 64 MiB; `none` prints nothing.
 */
export function byteProgress(stderr: Err, env: Record<string, string | undefined>, mode: ProgressMode, label: string, total: number): (bytes: number) => void {
  const bar = mode === 'auto' && Boolean(stderr.isTTY) && !env['CI'] && total >= AUTO_MIN_BYTES;
  if (mode === 'none' || (mode === 'auto' && !bar)) return () => undefined;
  let done = 0;
  let shownTenth = -1;
  let drawnAt = 0;
  return (bytes: number) => {
    done += bytes;
    const fraction = total > 0 ? Math.min(1, done / total) : 1;
    if (bar) {
      const now = Date.now();
      if (fraction < 1 && now - drawnAt < 100) return;
      drawnAt = now;
      const filled = Math.round(fraction * BAR);
      stderr.write(
        `\r${label} [${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}] ${Math.floor(fraction * 100)}% ${mb(done)}/${mb(total)} MB${fraction === 1 ? '\n' : ''}`,
      );
      return;
    }
    const tenth = Math.floor(fraction * 10);
    if (tenth === shownTenth) return;
    shownTenth = tenth;
    stderr.write(`${label}: ${tenth * 10}% (${mb(done)} of ${mb(total)} MB)\n`);
  };
}
