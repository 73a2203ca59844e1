import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StepConfig } from '../pipeline/config/load.js';
import type { PreflightCheck, PreflightContext } from '../pipeline/step-kind.js';
import type { Store } from '../pipeline/store/store.js';
import { findOnPath } from '../sandboxes/bubblewrap.js';
import { loadExeca } from '../sandboxes/lazy-execa.js';
import { loadStepTask } from './agent-step-config.js';
import { missing, pass } from '../pipeline/preflight.js';

/** scheme://... or scp-like user@host:path: a remote; anything else is a local path. */
const URL_LIKE = /^(?:[a-z][a-z0-9+.-]*:\/\/|[^/@\s]+@[^/:\s]+:)/i;

/**
 * The materialize kind's preflight (loaded by doctor only): every task's repository and
 * commit reachable, in the store's mirror (what materialize reads first) or at the source.
 */
export async function materializePreflight(steps: readonly StepConfig[], ctx: PreflightContext): Promise<PreflightCheck[]> {
  const { store } = ctx;
  const pathVar = ctx.env['PATH'] ?? '';
  const wanted = new Map<string, { source: string; commit: string; tasks: string[]; origin: string }>();
  const problems: PreflightCheck[] = [];
  for (const step of steps) {
    for (const id of step.matrix.find((d) => d.name === 'task')?.values ?? []) {
      const t = loadStepTask(step, id);
      if (!t.ok) {
        problems.push(
          missing(`task ${id} (step ${step.name})`, t.error.map((d) => d.message).join('; '), 'fix the task definition (pairbench plan shows where)'),
        );
        continue;
      }
      const key = `${t.value.repo.source}\n${t.value.repo.commit}`;
      const w = wanted.get(key) ?? { source: t.value.repo.source, commit: t.value.repo.commit, tasks: [], origin: t.value.origin };
      if (!w.tasks.includes(id)) w.tasks.push(id);
      wanted.set(key, w);
    }
  }
  const git = findOnPath('git', pathVar);
  const checks = await Promise.all(
    [...wanted.values()].map(async (w) => {
      const name = `task repository ${w.source} @ ${w.commit.slice(0, 12)} (task${w.tasks.length === 1 ? '' : 's'} ${w.tasks.join(', ')})`;
      if (!git) return missing(name, 'cannot be checked: git is not on PATH', 'install git');
      const r = await commitReachable(git, store, w.source, w.commit, pathVar);
      return r.ok ? pass(name, r.detail) : missing(name, r.detail, r.fix.replace('{origin}', w.origin));
    }),
  );
  return [...problems, ...checks];
}

async function hasCommit(git: string, gitDir: string, commit: string, pathVar: string): Promise<boolean> {
  const r = await (
    await loadExeca()
  )(git, ['-C', gitDir, 'cat-file', '-e', `${commit}^{commit}`], {
    reject: false,
    timeout: 20_000,
    // Never walk up into an enclosing repository: the path itself must be the repository.
    env: { PATH: pathVar, GIT_CEILING_DIRECTORIES: dirname(gitDir), GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', HOME: '/nonexistent' },
    extendEnv: false,
  });
  return r.exitCode === 0;
}

/** Whether materialize will find the commit: in the store's mirror (what it reads first), else at the source. */
async function commitReachable(
  git: string,
  store: Store,
  source: string,
  commit: string,
  pathVar: string,
): Promise<{ ok: true; detail: string } | { ok: false; detail: string; fix: string }> {
  // The mirror materialize reads (the store says where it keeps it).
  const mirror = store.mirrorPath(source);
  if (existsSync(mirror) && (await hasCommit(git, mirror, commit, pathVar))) return { ok: true, detail: "commit present in the store's mirror" };
  const local = source.startsWith('file://') ? fileURLToPath(source) : URL_LIKE.test(source) ? null : source;
  if (local === null) {
    const r = await (
      await loadExeca()
    )(git, ['ls-remote', source], { reject: false, timeout: 30_000, env: { PATH: pathVar, GIT_TERMINAL_PROMPT: '0', HOME: '/nonexistent' }, extendEnv: false });
    if (r.exitCode !== 0)
      return {
        ok: false,
        detail: `the remote does not answer: ${String(r.stderr).trim().split('\n')[0] ?? `git exit ${r.exitCode}`}`,
        fix: 'check the URL and network access (or vendor the repository and use repo.path)',
      };
    return String(r.stdout).includes(commit)
      ? { ok: true, detail: 'the remote answers; the commit is a ref tip' }
      : { ok: true, detail: 'the remote answers; the commit is not a ref tip, so it is confirmed only when materialize fetches it' };
  }
  if (!existsSync(local)) return { ok: false, detail: `${local} does not exist`, fix: 'restore the repository there, or correct repo.path in {origin}' };
  if (await hasCommit(git, local, commit, pathVar)) return { ok: true, detail: 'commit present' };
  return {
    ok: false,
    detail: `commit ${commit} is not in ${local}`,
    fix: `fetch it into that repository (git -C ${local} fetch origin ${commit}) or correct repo.commit in {origin}`,
  };
}
