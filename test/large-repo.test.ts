import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { git } from './fixtures.js';
import { Rig } from './rig.js';

// materialize streams `git archive | tar -x`: a tree larger than any output buffer works.
let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

describe('materialize of a large repository', () => {
  it('a commit whose tar is over 100 MB materializes, byte for byte', async () => {
    const repo = join(rig.dir, 'repos', 'big');
    rig.write('repos/big/README.md', '# big\n');
    // Incompressible: 130 MB of random bytes in 13 files (execa's default buffer was 100 MB).
    const digests: string[] = [];
    for (let i = 0; i < 13; i++) {
      const bytes = randomBytes(10 * 1024 * 1024);
      writeFileSync(join(repo, `blob-${i}.bin`), bytes);
      digests.push(createHash('sha256').update(bytes).digest('hex'));
    }
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'big');
    const commit = git(repo, 'rev-parse', 'HEAD');
    rig.write('tasks/big/task.yaml', `id: big\nrepo: { path: ../../repos/big, commit: ${commit} }\nprompt: "Read README.md."\nverifier: { command: "true" }\n`);
    rig.write('bench.config.yaml', 'steps:\n  materialize: { kind: materialize, matrix: { task: [big] } }\n');
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const listing = JSON.parse((await rig.cli('show', 'materialize/big', 'tree', '--list', '--json')).stdout);
    // Every file is in the stored tree under the digest of the bytes committed.
    for (const d of digests) expect(JSON.stringify(listing)).toContain(d);
  });
});
