import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cli } from './cli-in-process.js';
import { cliOutputProblems } from './cli-schema.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

// Misuse, as a new user commits it: each gets a message saying what to do, by exact text;
// every --json output (errors included) validates against schemas/cli-output.schema.json.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'pairbench.js');
const valid = cliOutputProblems;

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  rig.write(
    'bench.config.yaml',
    `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: command, command: 'true' }
    arms: { control: {} }
    sandbox: { backend: local, egress: open }
`,
  );
});
afterEach(() => rig.cleanup());

describe('the CLI, misused', () => {
  it('an unknown flag: our words, and the flag meant when one is close', async () => {
    expect(await rig.cli('run', '--frobnicate')).toEqual({
      code: 2,
      stdout: '',
      stderr: "pairbench run: unknown option --frobnicate\nRun 'pairbench run --help' for its options.\n",
    });
    expect((await rig.cli('run', '--jbos', '3')).stderr).toBe(
      "pairbench run: unknown option --jbos; did you mean --jobs?\nRun 'pairbench run --help' for its options.\n",
    );
    expect((await rig.cli('run', '--jobs')).stderr).toBe("pairbench run: option --jobs needs a value\nRun 'pairbench run --help' for its options.\n");
    expect((await rig.cli('plan', '--repair')).stderr).toBe(
      'pairbench plan: option --repair does not apply to "plan"\nRun \'pairbench plan --help\' for its options.\n',
    );
  });

  it('each command takes exactly the options its help documents', async () => {
    const usage = (command: string, message: string) => `pairbench ${command}: ${message}\nRun 'pairbench ${command} --help' for its options.\n`;
    // An option another command takes; one that takes no value given one; a value forgotten at the end.
    expect((await cli('verify-bundle', 'dir', '--config', 'x.yaml')).stderr).toBe(usage('verify-bundle', 'option --config does not apply to "verify-bundle"'));
    expect((await cli('plan', '--json=yes')).stderr).toBe(usage('plan', 'option --json takes no value'));
    expect((await cli('gc', '--max-size')).stderr).toBe(usage('gc', 'option --max-size needs a value'));
    expect((await cli('run', '-x')).stderr).toBe(usage('run', 'unknown option -x'));
    // generate's own usage errors honour --json like every other command's.
    const generate = await cli('generate', 'stub_function', '--json');
    expect(generate.code).toBe(2);
    expect(valid('#/definitions/error', JSON.parse(generate.stdout))).toBe('');
    // One table makes the parser and the help: every option a command accepts is in its help, and no other.
    const { COMMANDS } = await import('../cli/commands/index.js');
    const { OPTIONS } = await import('../cli/options.js');
    const { helpFor, optionsOf } = await import('../cli/help.js');
    for (const command of Object.keys(COMMANDS) as (keyof typeof COMMANDS)[]) {
      const help = helpFor(command);
      const accepted = optionsOf(command);
      for (const name of Object.keys(OPTIONS) as (keyof typeof OPTIONS)[]) {
        const listed = new RegExp(`^ {2}(-[a-z], | {4})--${name}( |$)`, 'm').test(help);
        expect(listed, `${command} --help lists --${name}`).toBe(accepted.includes(name));
        if (accepted.includes(name)) continue;
        expect((await cli(command, `--${name}`)).stderr, `${command} --${name}`).toContain(`option --${name} does not apply to "${command}"`);
      }
    }
  });

  it('every command module in cli/commands is in the registry, under the name of its file', async () => {
    const { COMMANDS } = await import('../cli/commands/index.js');
    const dir = join(ROOT, 'cli', 'commands');
    const declared: string[] = [];
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'index.ts')) {
      const module: Record<string, unknown> = await import(join(dir, file));
      for (const value of Object.values(module)) {
        if (typeof value !== 'object' || value === null || typeof (value as { run?: unknown }).run !== 'function') continue;
        const { name } = value as { name: string };
        declared.push(name);
        expect(file, `the command ${name} is declared in cli/commands/${name}.ts`).toBe(`${name}.ts`);
        expect(COMMANDS[name as keyof typeof COMMANDS], `${name} is registered in cli/commands/index.ts`).toBe(value);
      }
    }
    expect(declared.sort()).toEqual(Object.keys(COMMANDS).sort());
  });

  it('the commands a memo may answer (bin/ decides before loading any command) are the ones that declare it', async () => {
    const { COMMANDS } = await import('../cli/commands/index.js');
    const { MEMOIZED_COMMANDS } = await import('../pipeline/memo/memo-file.js');
    const declaring = Object.values(COMMANDS).flatMap((c) => (c.config && c.memo ? [c.name] : []));
    expect([...MEMOIZED_COMMANDS].sort()).toEqual(declaring.sort());
  });

  it('usage errors are JSON under --json, in the one error shape', async () => {
    const r = await rig.cli('run', '--frobnicate', '--json');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout);
    expect(out).toEqual({
      schema_version: 1,
      ok: false,
      errors: [{ severity: 'error', message: 'unknown option --frobnicate', hint: "Run 'pairbench run --help' for its options." }],
    });
    expect(valid('#/definitions/error', out)).toBe('');
    const unknown = JSON.parse((await cli('bogus', '--json')).stdout);
    expect(unknown.errors[0].message).toBe('unknown command "bogus"');
    expect(valid('', unknown)).toBe('');
  });

  it('a mistyped step name gets the step it meant', async () => {
    const r = await rig.cli('plan', 'attemps');
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('error: no node matches "attemps"\n  hint: did you mean "attempts"? (\'pairbench plan --all\' lists every node)\n');
  });

  it('a remote cache address that is not an http(s) URL is said so, before anything runs', async () => {
    for (const url of ['ftp://cache.internal', 'http://cache internal:8080']) {
      const r = await rig.cli('run', '--remote-cache', url);
      expect([r.code, r.stderr]).toEqual([2, `error: remote cache "${url}" is not an http(s) URL\n`]);
    }
  });

  it("plan's summary counts the nodes to run by what they are (each step kind's title)", async () => {
    expect((await rig.cli('plan')).stdout.trimEnd().split('\n').at(-1)).toBe('2 nodes: 0 cached, 2 to run (1 task tree, 1 agent attempt)');
  });

  it('--version and -V print the version', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(await cli('-V')).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    expect((await cli('--version')).stdout).toBe(`${version}\n`);
    expect((await cli('--help')).stdout).toContain('  -V, --version       the version of pairbench');
  });

  it("each command's help says what its own exit codes mean", async () => {
    expect((await cli('history', '--help')).stdout).toMatch(/Exit codes: 0 listed; 2 usage or config error, or an unknown cohort\.\n$/);
    expect((await cli('plan', '--help')).stdout).not.toContain('some node failed');
    expect((await cli('run', '--help')).stdout).toContain('1 some node failed or was skipped');
  });

  it('verify-bundle on a directory that is not a bundle says so', async () => {
    const dir = join(rig.dir, 'not-a-bundle');
    mkdirSync(dir);
    expect(await cli('verify-bundle', dir)).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: ${dir} is not a bundle: it has no manifest.json\n  hint: give the directory pairbench export --out wrote\n`,
    });
    expect((await cli('verify-bundle', join(rig.dir, 'nowhere'))).stderr).toBe(
      `error: ${join(rig.dir, 'nowhere')} does not exist\n  hint: give the directory pairbench export --out wrote\n`,
    );
  });

  it('a directory without a config: what to do, not ENOENT', () => {
    const empty = mkdtempSync(join(tmpdir(), 'pairbench-empty-'));
    try {
      const r = spawnSync(process.execPath, [BIN, 'plan'], { cwd: empty, encoding: 'utf8', env: { PATH: process.env['PATH'], CI: '1' } });
      expect(r.status).toBe(2);
      expect(r.stderr).toBe(`error: no bench.config.yaml in ${empty}\n  hint: run pairbench in the directory of your config, or pass --config FILE\n`);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('plan, run and the store commands: --json validates against the published schemas (snake_case, schema_version)', async () => {
    const plan = JSON.parse((await rig.cli('plan', '--json')).stdout);
    expect(valid('#/definitions/plan', plan)).toBe('');
    const run = JSON.parse((await rig.cli('run', '--json')).stdout);
    expect(valid('#/definitions/run', run)).toBe('');
    expect(run.summary).toHaveProperty('duration_ms');
    // The store commands, on the store that run filled.
    for (const [definition, args] of [
      ['status', ['status']],
      ['fsck', ['fsck']],
      ['gc', ['gc', '--dry-run']],
      ['explain', ['explain', 'attempts/fix-add/control/1']],
      ['show', ['show', 'attempts/fix-add/control/1']],
      ['history', ['history']],
      ['doctor', ['doctor', '--skip-canary']],
    ] as const) {
      const r = await rig.cli(...args, '--json');
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(valid(`#/definitions/${definition}`, JSON.parse(r.stdout)), args.join(' ')).toBe('');
    }
  });
});

describe('pairbench init', () => {
  it('scaffolds a cohort and a first task that plan accepts; never overwrites; names what is missing', async () => {
    const dir = join(rig.dir, 'new-cohort');
    const repo = join(rig.dir, 'repos', 'calc');
    const commit = execFileSync('git', ['-C', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    const r = await cli('init', dir, '--repo', repo, '--test-command', 'node --test', '--json');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(valid('#/definitions/init', out)).toBe('');
    expect(out.commit).toBe(commit);
    expect(out.files.map((f: string) => f.slice(dir.length + 1))).toEqual(['bench.config.yaml', 'tasks/first-task/task.yaml', 'context/CLAUDE.md']);
    expect(readFileSync(join(dir, 'tasks', 'first-task', 'task.yaml'), 'utf8')).toContain(`  commit: ${commit}\n`);
    const plan = await cli('plan', '--config', join(dir, 'bench.config.yaml'), '--json');
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    expect(JSON.parse(plan.stdout)).toMatchObject({ ok: true, to_run: 22 });

    expect(await cli('init', dir, '--repo', repo)).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: ${join(dir, 'bench.config.yaml')} exists: init never overwrites a file\n  hint: edit that config, or give init another directory\n`,
    });
    expect((await cli('init', join(rig.dir, 'other'))).stderr).toBe(
      "pairbench init: missing --repo PATH: the local git repository the first task starts from\nRun 'pairbench init --help' for its options.\n",
    );
    expect((await cli('init', join(rig.dir, 'other'), '--repo', repo, '--commit', 'no-such-rev')).stderr).toMatch(
      /^error: .*calc has no commit no-such-rev\n {2}hint: give --repo a local git repository, and --commit one of its commits\n$/,
    );
  });
});

describe('an interrupted run', () => {
  it('names the nodes Ctrl-C stopped, and exits 130', async () => {
    rig.write('bench.config.yaml', rig.read('bench.config.yaml').replace("command: 'true'", "command: 'sleep 20'"));
    const child = rig.spawn('run', '--progress', 'plain');
    // Interrupt once the attempt is running.
    let seen = '';
    await new Promise<void>((resolve) =>
      child.stderr!.on('data', (d) => {
        seen += d;
        if (seen.includes('run     attempts/fix-add/control/1')) resolve();
      }),
    );
    child.kill('SIGINT');
    const r = await child.done;
    expect(r.code).toBe(130);
    expect(r.stderr).toContain('pairbench: interrupted; stopping running nodes (completed ones are kept).');
    expect(r.stderr).toContain(
      'interrupted: 1 node(s) stopped before they finished: attempts/fix-add/control/1; run again to build them (completed nodes are kept)\n',
    );
    // The stopped node is counted as interrupted, not as a failure.
    expect(r.stderr).toMatch(/ 0 failed, 1 interrupted, /);
  });

  it.skipIf(!existsSync('/usr/bin/script'))('Ctrl-C on a terminal (the live renderer) exits 130 too', async () => {
    rig.write('bench.config.yaml', rig.read('bench.config.yaml').replace("command: 'true'", "command: 'sleep 20'"));
    // A real terminal: script(1) gives the CLI a pty, and Ctrl-C is the byte the terminal turns into SIGINT.
    // A terminal has a size (a pty script(1) makes has none): the renderer draws to its width.
    const cmd = `stty cols 160 rows 40; exec ${[process.execPath, BIN, 'run', '--config', join(rig.dir, 'bench.config.yaml')].map((a) => `'${a}'`).join(' ')}`;
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'CI' && !k.startsWith('VITEST') && k !== 'NODE_ENV'));
    const child = spawn('/usr/bin/script', ['-q', '-e', '-f', '-c', cmd, '/dev/null'], { env: { ...env, TERM: 'xterm' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let seen = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve) =>
      child.stdout!.on('data', (d) => {
        seen += d;
        // Once the live renderer shows the attempt running.
        if (/attempts {2}0\/1, 1 running/.test(seen)) resolve();
      }),
    );
    child.stdin!.write('\x03');
    const code = await exited;
    expect(code, seen.slice(-2000)).toBe(130);
    expect(seen).toContain('pairbench: interrupted; stopping running nodes');
    expect(seen).toMatch(/ 0 failed, 1 interrupted, /);
  });
});
