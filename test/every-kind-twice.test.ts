/**
 * Every step kind, run twice through bin/pairbench.js as a user runs it: the start-up bundle
 * loaded through V8's code cache (bin/code-cache.js). The first run of a fresh install has no
 * cache; the second compiles nothing and runs from the cached code, which is where a dynamic
 * import() inside the bundle used to fail ("A dynamic import callback was not specified": the
 * environment step, every Harbor task). The configs must use every registered kind, so a new
 * kind is covered here without a new test.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { dockerBackend } from '../sandboxes/docker.js';
import { builtinStepKinds } from '../steps/index.js';
import { ensureTestImage } from './docker-image.js';
import { calculatorTask, everyLocalKindConfig, makeRepo } from './fixtures.js';
import { Rig } from './rig.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const dockerUp = (await dockerBackend().available()).ok;
const requireDocker = process.env['PAIRBENCH_REQUIRE_SANDBOXES'] === '1';

/** A copy of the built package (what an install holds) with no code cache yet. */
function freshInstall(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-install-'));
  for (const part of ['bin', 'dist', 'schemas', 'package.json']) cpSync(join(ROOT, part), join(dir, part), { recursive: true, preserveTimestamps: true });
  mkdirSync(join(dir, 'sandboxes'));
  cpSync(join(ROOT, 'sandboxes', 'forwarder.mjs'), join(dir, 'sandboxes', 'forwarder.mjs'));
  rmSync(join(dir, 'dist', 'bundle', '.v8-cache'), { recursive: true, force: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

function bin(install: string, cwd: string, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(install, 'bin', 'pairbench.js'), ...args], {
      cwd,
      env: { PATH: process.env['PATH'] ?? '', HOME: cwd, CI: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/** A Harbor task: its image built by the environment step, attempts and verifier in docker. */
async function dockerConfig(dir: string): Promise<string> {
  const base = await ensureTestImage();
  const baseTag = (await execa('docker', ['image', 'inspect', '--format', '{{index .RepoTags 0}}', base])).stdout.trim();
  const [commit] = makeRepo(join(dir, 'datasets'), [
    {
      'tasks/greet/instruction.md': 'Make /app/greet.sh print exactly "hello".\n',
      'tasks/greet/task.toml': '[verifier]\ntimeout_sec = 60.0\n\n[environment]\nallow_internet = false\n',
      'tasks/greet/environment/Dockerfile': `FROM ${baseTag}\nWORKDIR /app\nCOPY app/ /app/\n`,
      'tasks/greet/environment/app/greet.sh': 'echo hi\n',
      'tasks/greet/tests/test.sh':
        '#!/bin/bash\nmkdir -p /logs/verifier\nif [[ "$(bash /app/greet.sh)" == hello ]]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n',
      'tasks/greet/solution/solve.sh': '#!/bin/bash\necho "echo hello" > /app/greet.sh\n',
    },
  ]);
  const sandbox = 'sandbox: { backend: docker, egress: none }';
  const m = 'matrix: { task: [greet] }';
  return `steps:
  materialize: { kind: materialize, tasks: &tasks { dir: datasets/tasks, repo: datasets, commit: ${commit} }, ${m} }
  environment: { kind: environment, tasks: *tasks, needs: [materialize], ${m} }
  certify: { kind: certify, tasks: *tasks, needs: [materialize, environment], ${m}, ${sandbox}, policy: { repeats: 1 } }
  oracle: { kind: run, tasks: *tasks, needs: [materialize, environment, certify], matrix: { task: [greet], arm: [only], rep: 1 }, agent: { adapter: oracle }, arms: { only: {} }, ${sandbox} }
  verify: { kind: verify, tasks: *tasks, needs: [materialize, environment, certify, oracle], matrix: { task: [greet], arm: [only], rep: 1 }, ${sandbox} }
`;
}

const kindsOf = (config: string) => Object.values((parse(config) as { steps: Record<string, { kind: string }> }).steps).map((s) => s.kind);

describe.skipIf(!dockerUp && !requireDocker)('every step kind, twice, through bin/pairbench.js', () => {
  let install: string;
  let rig: Rig;
  beforeAll(() => {
    install = freshInstall();
    rig = new Rig();
  });
  afterAll(() => {
    rig.cleanup();
    rmSync(install, { recursive: true, force: true });
  });

  it('each config runs from a fresh store on the first start (no code cache) and again on the second (from the cache)', async () => {
    const { commit } = calculatorTask(rig.dir);
    rig.write('generator.json', JSON.stringify({ turns: [], completions: [{ text: 'use +\n' }] }));
    rig.write('judge.json', JSON.stringify({ turns: [], completions: [{ text: '(a) Arm B fixed add().' }] }));
    const configs = { 'local.yaml': everyLocalKindConfig(commit), 'docker.yaml': await dockerConfig(rig.dir) };
    // Derived from the registry: a kind no config here uses fails this line, not silently passes.
    expect(new Set(Object.values(configs).flatMap(kindsOf))).toEqual(new Set(builtinStepKinds.keys()));
    for (const [name, text] of Object.entries(configs)) rig.write(name, text);

    for (const start of ['first (no code cache)', 'second (from the code cache)']) {
      for (const name of Object.keys(configs)) {
        rmSync(join(rig.dir, '.pairbench'), { recursive: true, force: true });
        const r = await bin(install, rig.dir, ['run', '--config', name]);
        expect(r.code, `${start} start, ${name}:\n${r.output}`).toBe(0);
        expect(r.output).not.toMatch(/FAILED|dynamic import/);
      }
      // The first start left V8's cache beside the bundle; the second one reads it.
      expect(readdirSync(join(install, 'dist', 'bundle', '.v8-cache')).length, start).toBeGreaterThan(0);
    }
  });
});
