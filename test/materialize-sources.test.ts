import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { git } from './fixtures.js';
import { Rig } from './rig.js';

// materialize reads a commit from the mirror's objects (steps/git-objects.ts) when they are the
// bytes `git archive | tar -x` writes, and extracts it otherwise. Both must store the same tree,
// the same kept files and the same receipt: the digests every downstream key holds. The archive
// is taken here the way a user's machine takes it: core.autocrlf set (to `input`, which changes no
// byte git archive writes); the objects are proven to be read without tar by a `tar` that fails.
let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

/** A repository with the shapes that decide a tree's digest: nesting, sort order, modes, links, a gitlink, odd names, sizes. */
function foreignRepo(dir: string): string {
  const files: Record<string, string | Buffer> = {
    'a.txt': 'a\n',
    'a/b.txt': 'walked before a.txt\n',
    'a-b/c.txt': 'c\n',
    'src/add.mjs': 'export const add = (a, b) => a - b;\n',
    'src/empty.js': '',
    'src/big.bin': Buffer.alloc(300_000, 7),
    'bin/run.sh': '#!/bin/sh\necho run\n',
    'CLAUDE.md': 'root instructions\n',
    'docs/CLAUDE.md': 'docs instructions\n',
    'docs/guide.md': 'a guide\n',
    'src/README.md': 'allowed documentation\n',
    'README.md': 'top readme\n',
    '.claude/settings.json': '{}\n',
    '.claude/commands/deep/fix.md': 'fix it\n',
    'config/cursor/rules.mdc': 'reached through a symlink\n',
    'über/naïve.txt': 'utf-8 names\n',
    'sp ace/x y.txt': 'spaces\n',
  };
  for (const [p, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), content);
  }
  chmodSync(join(dir, 'bin/run.sh'), 0o755);
  symlinkSync('config/cursor', join(dir, '.cursor'));
  symlinkSync('../src/add.mjs', join(dir, 'a', 'link.mjs'));
  symlinkSync('nowhere', join(dir, 'dangling'));
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  // A submodule's entry (a gitlink): an archive writes it as an empty directory.
  git(dir, 'update-index', '--add', '--cacheinfo', `160000,${'1'.repeat(40)},vendor/lib`);
  git(dir, 'commit', '-q', '-m', 'shapes');
  return git(dir, 'rev-parse', 'HEAD');
}

const ARCHIVE_ENV = { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'core.autocrlf', GIT_CONFIG_VALUE_0: 'input' };

/** The three outputs' digests of materialize/shapes in store `name`, and its receipt. */
async function materialized(name: string, env: Record<string, string>): Promise<{ outputs: Record<string, string>; receipt: unknown }> {
  // A process of its own: git and tar are its children, with its environment.
  rig.env = env;
  const store = join(rig.dir, name);
  const r = await rig.spawn('run', '--store', store).done;
  rig.env = {};
  expect(r.code, r.stderr).toBe(0);
  const ex = JSON.parse((await rig.cli('explain', 'materialize/shapes', '--json', '--store', store)).stdout) as {
    record: { outputs: Record<string, { digest: string }> };
  };
  const receipt = JSON.parse((await rig.cli('show', 'materialize/shapes', 'redaction.json', '--store', store)).stdout);
  return { outputs: Object.fromEntries(Object.entries(ex.record.outputs).map(([k, v]) => [k, v.digest])), receipt };
}

describe('materialize from git objects and from an archive', () => {
  for (const [what, step] of [
    ['the default policy', ''],
    ['documentation removed outside allowed paths', '\n    remove_documentation: true'],
    ['a policy that removes nothing', '\n    redact: ["nothing/**"]'],
  ] as const) {
    it(`store the same tree, kept files and receipt: ${what}`, async () => {
      const commit = foreignRepo(join(rig.dir, 'repos', 'shapes'));
      rig.write(
        'tasks/shapes/task.yaml',
        `id: shapes\nfamily: f\ncategory: c\nrepo: { path: ../../repos/shapes, commit: ${commit} }\nprompt: fix add\nallowed_paths: ["src/**"]\nverifier:\n  fail_to_pass: { t: "true" }\n`,
      );
      rig.write('bench.config.yaml', `steps:\n  materialize:\n    kind: materialize\n    matrix: { task: [shapes] }${step}\n`);
      // A tar that fails: the objects are read without it.
      rig.write('no-tar/tar', '#!/bin/sh\necho "tar was run" >&2\nexit 1\n');
      chmodSync(join(rig.dir, 'no-tar', 'tar'), 0o755);
      const fromObjects = await materialized('store-objects', { PATH: `${join(rig.dir, 'no-tar')}:${process.env['PATH']}` });
      const fromArchive = await materialized('store-archive', ARCHIVE_ENV);
      expect(fromObjects).toEqual(fromArchive);
      // And the archive path is the one that needs tar.
      rig.env = { ...ARCHIVE_ENV, PATH: `${join(rig.dir, 'no-tar')}:${process.env['PATH']}` };
      const refused = await rig.spawn('run', '--store', join(rig.dir, 'store-archive-no-tar')).done;
      expect(refused.code).not.toBe(0);
      expect(refused.stderr, refused.stderr).toContain('tar -x exited 1');
    });
  }
});
