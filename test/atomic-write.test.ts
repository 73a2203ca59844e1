import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../pipeline/atomic-write.js';

// The one atomic-write routine (store records, blobs, registry documents, bundle files).
describe('writeFileAtomic', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pairbench-atomic-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('replaces a file whole, leaves no temp file, and keeps the mode it is given', () => {
    const f = join(dir, 'a', 'b.json');
    writeFileAtomic(f, 'old\n');
    writeFileAtomic(f, Buffer.from('new\n'), { mode: 0o444, sync: false, label: 'blob' });
    expect(readFileSync(f, 'utf8')).toBe('new\n');
    expect(statSync(f).mode & 0o777).toBe(0o444);
    expect(readdirSync(join(dir, 'a'))).toEqual(['b.json']);
  });

  it('writes into a directory removed since it was first made (a bundle directory emptied and written again)', () => {
    const f = join(dir, 'out', 'report.md');
    writeFileAtomic(f, 'one');
    rmSync(join(dir, 'out'), { recursive: true });
    writeFileAtomic(f, 'two');
    expect(readFileSync(f, 'utf8')).toBe('two');
  });

  it('a writer killed mid-write leaves the old file as it was', () => {
    const f = join(dir, 'record.json');
    writeFileSync(f, '{"v":1}\n');
    // A child writes 64 MiB through the same routine and is killed (SIGKILL) as soon as its temp file appears.
    const script = `import('${join(process.cwd(), 'dist/pipeline/atomic-write.js')}').then(({ writeFileAtomic }) => writeFileAtomic(${JSON.stringify(f)}, Buffer.alloc(64 << 20, 120)))`;
    const killer = `n=0; node -e "${script.replaceAll('"', '\\"')}" & pid=$!; while [ $n -lt 2000 ] && ! ls ${dir} | grep -q '^tmp-'; do n=$((n+1)); sleep 0.005; done; ls ${dir} | grep -q '^tmp-' && echo caught; kill -9 $pid; wait $pid; true`;
    const r = spawnSync('bash', ['-c', killer], { encoding: 'utf8' });
    expect(r.stdout, r.stderr).toContain('caught'); // killed while its temp file was being written
    expect(readFileSync(f, 'utf8')).toBe('{"v":1}\n');
    for (const name of readdirSync(dir).filter((n) => n.startsWith('tmp-'))) rmSync(join(dir, name));
    expect(existsSync(f)).toBe(true);
  });
});
