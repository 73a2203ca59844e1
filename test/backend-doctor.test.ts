// What doctor checks for a sandbox backend is the backend's own (sandboxes/<name>-doctor.ts),
// found through the registry: every registered backend answers for the steps that use it, says
// what to do when this machine cannot run it, and flags each egress mode it would refuse.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BackendUse } from '../sandboxes/backend-doctor.js';
import { backendDoctor, EGRESS_MODES, SANDBOX_BACKENDS } from '../sandboxes/index.js';
import type { EgressMode } from '../sandboxes/sandbox.js';

const empty = mkdtempSync(join(tmpdir(), 'pairbench-nothing-'));
afterAll(() => rmSync(empty, { recursive: true, force: true }));

const use = (egress: EgressMode): BackendUse => ({
  step: 'attempts',
  egress,
  image: null,
  resources: {},
  auto: false,
  attempts: true,
  builtImage: false,
  templateImages: [],
});

/** A machine where no isolating backend can work: no bwrap on PATH, no Docker engine at the socket. */
const bare = { PATH: empty, DOCKER_HOST: `unix://${join(empty, 'docker.sock')}` };

describe('sandbox backends in doctor', () => {
  it.each(SANDBOX_BACKENDS)('%s: its line names it and its steps; where it cannot run here, the line says what to do', async (name) => {
    const report = await (await backendDoctor(name))([use(EGRESS_MODES[name][0]!)], { env: bare, fallback: null });
    const line = report.checks.find((c) => c.name === `sandbox ${name} (step attempts)`);
    expect(line, JSON.stringify(report.checks)).toBeDefined();
    if (!line!.ok) expect(line!.fix).toMatch(/\w/);
    // Only local runs anywhere: an isolating backend with nothing to isolate with is missing, not passed.
    expect(line!.ok).toBe(name === 'local');
  });

  it.each(SANDBOX_BACKENDS.flatMap((b) => (['none', 'allowlist', 'open'] as const).filter((m) => !EGRESS_MODES[b].includes(m)).map((m) => [b, m] as const)))(
    '%s flags egress %s, which it refuses to start with',
    async (name, mode) => {
      const report = await (await backendDoctor(name))([use(mode)], { env: bare, fallback: null });
      expect(report.checks).toContainEqual(expect.objectContaining({ name: `sandbox ${name} egress ${mode} (step attempts)`, ok: false }));
    },
  );

  it('a backend chosen by auto because nothing isolates here says why and what isolates it', async () => {
    const fallback = { cause: 'bwrap is not installed', fix: 'apt-get install bubblewrap' };
    const report = await (await backendDoctor('local'))([{ ...use('open'), auto: true }], { env: bare, fallback });
    expect(report.checks[0]).toMatchObject({
      ok: true,
      fix: fallback.fix,
      detail: expect.stringContaining('chose it by backend auto: bwrap is not installed'),
    });
  });
});
