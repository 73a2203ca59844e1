import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { redact, verifyBundle, writeBundle, REDACTED, type BundleFile } from '../report/bundle.js';
import { canonicalJson } from '../pipeline/canonical-json.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pairbench-bundle-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const files = (): BundleFile[] => [
  { path: 'report.json', bytes: JSON.stringify({ schema_version: 1, verdict: 'positive' }) },
  { path: 'report.md', bytes: '# pairbench\n\npositive\n' },
  { path: 'attempts/t1/control/0/trajectory.json', bytes: '{"steps":[]}' },
  { path: 'attempts/t1/treatment/0/diff.patch', bytes: Buffer.from([0, 1, 2, 255, 254, 10]) },
  // An excluded attempt is kept in the bundle like any other.
  { path: 'attempts/t2/control/0/excluded.json', bytes: '{"decision":"excluded","reason":"infra_error"}' },
  { path: 'empty.txt', bytes: '' },
];

describe('writeBundle / verifyBundle', () => {
  it('writes every file and a sorted canonical manifest that does not list itself', () => {
    const written = writeBundle(dir, files());
    expect(written.ok).toBe(true);
    if (!written.ok) return;

    const raw = readFileSync(join(dir, 'manifest.json'), 'utf8');
    const parsed = JSON.parse(raw) as { schema_version: number; created_by: string; files: Record<string, { sha256: string; bytes: number }> };
    expect(raw).toBe(canonicalJson(parsed) + '\n');
    expect(parsed.schema_version).toBe(1);
    expect(parsed.created_by).toBe('pairbench');
    expect(Object.keys(parsed.files)).toEqual([...files().map((f) => f.path)].sort());
    expect(parsed.files['manifest.json']).toBeUndefined();

    // Every entry is the real SHA-256 and byte length of what is on disk.
    for (const f of files()) {
      const data = readFileSync(join(dir, f.path));
      expect(parsed.files[f.path]).toEqual({ sha256: createHash('sha256').update(data).digest('hex'), bytes: data.length });
      expect(data.equals(typeof f.bytes === 'string' ? Buffer.from(f.bytes) : f.bytes)).toBe(true);
    }
    // No temp files left behind.
    expect(readdirSync(dir, { recursive: true }).filter((p) => String(p).includes('.pairbench-tmp-'))).toEqual([]);

    expect(verifyBundle(dir)).toEqual({ ok: true, value: { ok: true, files: files().length } });
  });

  it('fails naming the file when one byte changes', () => {
    expect(writeBundle(dir, files()).ok).toBe(true);
    const p = join(dir, 'attempts/t1/treatment/0/diff.patch');
    const data = readFileSync(p);
    data[3] = data[3]! ^ 1; // same length, one byte different
    writeFileSync(p, data);
    expect(verifyBundle(dir)).toEqual({
      ok: false,
      error: { differs: ['attempts/t1/treatment/0/diff.patch'], missing: [], extra: [] },
    });
  });

  it('fails naming the file when one byte is appended (length differs)', () => {
    expect(writeBundle(dir, files()).ok).toBe(true);
    appendFileSync(join(dir, 'empty.txt'), 'x');
    expect(verifyBundle(dir)).toEqual({ ok: false, error: { differs: ['empty.txt'], missing: [], extra: [] } });
  });

  it('fails naming a deleted file', () => {
    expect(writeBundle(dir, files()).ok).toBe(true);
    unlinkSync(join(dir, 'attempts/t2/control/0/excluded.json'));
    expect(verifyBundle(dir)).toEqual({
      ok: false,
      error: { differs: [], missing: ['attempts/t2/control/0/excluded.json'], extra: [] },
    });
  });

  it('fails naming an added file, and a symlink is never followed', () => {
    expect(writeBundle(dir, files()).ok).toBe(true);
    writeFileSync(join(dir, 'attempts/t1/sneaky.txt'), 'not in the manifest');
    expect(verifyBundle(dir)).toEqual({ ok: false, error: { differs: [], missing: [], extra: ['attempts/t1/sneaky.txt'] } });

    unlinkSync(join(dir, 'attempts/t1/sneaky.txt'));
    unlinkSync(join(dir, 'report.md'));
    symlinkSync(join(dir, 'report.json'), join(dir, 'report.md'));
    expect(verifyBundle(dir)).toEqual({ ok: false, error: { differs: ['report.md'], missing: [], extra: [] } });
  });

  it('reports a missing or tampered manifest', () => {
    expect(writeBundle(dir, files()).ok).toBe(true);
    const manifest = readFileSync(join(dir, 'manifest.json'), 'utf8');
    writeFileSync(join(dir, 'manifest.json'), manifest.replace('"created_by":"pairbench"', '"created_by":"someone"'));
    const tampered = verifyBundle(dir);
    expect(tampered.ok).toBe(false);
    if (!tampered.ok) expect(tampered.error.differs).toEqual(['manifest.json']);

    // A manifest that points outside the bundle is malformed, not followed.
    writeFileSync(join(dir, 'manifest.json'), manifest.replace('"empty.txt"', '"../empty.txt"'));
    const escaped = verifyBundle(dir);
    expect(escaped.ok).toBe(false);
    if (!escaped.ok) expect(escaped.error.differs).toEqual(['manifest.json']);

    unlinkSync(join(dir, 'manifest.json'));
    const gone = verifyBundle(dir);
    expect(gone.ok).toBe(false);
    if (!gone.ok) {
      expect(gone.error.missing).toEqual(['manifest.json']);
      expect(gone.error.extra).toHaveLength(files().length);
    }
  });

  it('refuses bad paths, duplicates, and a directory holding files it would not list', () => {
    for (const bad of ['/abs.txt', '../up.txt', 'a/../b', 'a//b', 'a\\b', 'manifest.json', '', 'dir/']) {
      const r = writeBundle(dir, [{ path: bad, bytes: 'x' }]);
      expect(r.ok, bad).toBe(false);
    }
    expect(
      writeBundle(dir, [
        { path: 'a', bytes: '1' },
        { path: 'a', bytes: '2' },
      ]).ok,
    ).toBe(false);
    expect(
      writeBundle(dir, [
        { path: 'a', bytes: '1' },
        { path: 'a/b', bytes: '2' },
      ]).ok,
    ).toBe(false);
    expect(readdirSync(dir)).toEqual([]); // nothing written by a refused bundle

    writeFileSync(join(dir, 'stray.log'), 'left over');
    const r = writeBundle(dir, files());
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toContain('stray.log');

    // Re-exporting the same file set over an earlier bundle is fine.
    rmSync(join(dir, 'stray.log'));
    expect(writeBundle(dir, files()).ok).toBe(true);
    expect(writeBundle(dir, files()).ok).toBe(true);
    expect(verifyBundle(dir).ok).toBe(true);
  });
});

describe('redact', () => {
  const home = '/home/ci';
  const opts = {
    home,
    hostPaths: [
      { path: '/home/ci/work/proj', as: '<project>' },
      { path: '/home/ci/work/proj/.pairbench', as: '<store>' },
      { path: '/tmp/pairbench-run-abc123/', as: '<work>' },
      home,
    ],
    secrets: ['hunter2-literal-secret'],
  };

  it('replaces host paths by prefix, longest first, at path boundaries only', () => {
    const text = [
      'cd /home/ci/work/proj && ls',
      'store at /home/ci/work/proj/.pairbench/cas/ab/cd',
      'workspace /tmp/pairbench-run-abc123/ws/src/x.ts',
      'config in /home/ci/.config/claude.json.',
      'another user /home/ci2/file and /tmp/pairbench-run-abc1234 stay',
      'ends with /home/ci',
    ].join('\n');
    const out = redact(text, opts);
    expect(out).toBe(
      [
        'cd <project> && ls',
        'store at <store>/cas/ab/cd',
        'workspace <work>/ws/src/x.ts',
        'config in <home>/.config/claude.json.',
        'another user /home/ci2/file and /tmp/pairbench-run-abc1234 stay',
        'ends with <home>',
      ].join('\n'),
    );
    expect(out).not.toContain('/home/ci/');
  });

  it('never treats "/" or "" as a host path', () => {
    expect(redact('/usr/bin/node', { hostPaths: ['/', ''] })).toBe('/usr/bin/node');
  });

  it('redacts keys, auth headers, JSON key fields, bearer tokens and literal secrets', () => {
    const key = 'sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789';
    const text = [
      `POST /v1/messages`,
      `x-api-key: ${key}`,
      `Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig`,
      JSON.stringify({ api_key: 'plain-value-1', nested: { 'x-api-key': 'plain-value-2', OPENAI_API_KEY: 'v3' }, input_tokens: 120, model: 'm' }),
      JSON.stringify({ tool_output: JSON.stringify({ apiKey: 'inner-value-4' }) }),
      `curl -H "Authorization: Bearer abcdefgh12345678" https://example.test/?key=AIzaLikeValue99&x=1`,
      `ANTHROPIC_API_KEY=${key} claude -p hi`,
      `the password is hunter2-literal-secret, ok`,
      `mentioned in prose: ${key}`,
    ].join('\n');
    const out = redact(text, opts);
    for (const leaked of [
      key,
      'eyJhbGciOiJIUzI1NiJ9',
      'plain-value-1',
      'plain-value-2',
      'v3"',
      'inner-value-4',
      'abcdefgh12345678',
      'AIzaLikeValue99',
      'hunter2-literal-secret',
    ]) {
      expect(out, leaked).not.toContain(leaked);
    }
    // Names and non-secret fields stay readable.
    expect(out).toContain(`x-api-key: ${REDACTED}`);
    expect(out).toContain(`Authorization: ${REDACTED}`);
    expect(out).toContain(`"api_key":"${REDACTED}"`);
    expect(out).toContain('"input_tokens":120');
    expect(out).toContain('"model":"m"');
    expect(out).toContain(`ANTHROPIC_API_KEY=${REDACTED} claude -p hi`);
    expect(out).toContain('POST /v1/messages');
    // Still valid JSON where it was JSON.
    const jsonLine = out.split('\n')[3]!;
    expect(JSON.parse(jsonLine).nested['x-api-key']).toBe(REDACTED);
    const innerLine = out.split('\n')[4]!;
    expect(JSON.parse(JSON.parse(innerLine).tool_output).apiKey).toBe(REDACTED);
    // Idempotent.
    expect(redact(out, opts)).toBe(out);
  });
});

describe('large bundles', () => {
  it('verify-bundle hashes a 1 GiB file in bounded memory, shows its progress, and names a flipped byte in it', async () => {
    const { main } = await import('../cli/main.js');
    const { truncateSync, openSync, writeSync, closeSync } = await import('node:fs');
    const written = writeBundle(dir, files());
    expect(written.ok).toBe(true);
    // A 1 GiB file (sparse: zeros) listed in the manifest as export would list it.
    const big = join(dir, 'attempts', 'big.bin');
    writeFileSync(big, '');
    truncateSync(big, 1024 ** 3);
    const zeros = createHash('sha256');
    const chunk = Buffer.alloc(16 << 20);
    for (let i = 0; i < 64; i++) zeros.update(chunk);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
    manifest.files['attempts/big.bin'] = { sha256: zeros.digest('hex'), bytes: 1024 ** 3 };
    writeFileSync(join(dir, 'manifest.json'), canonicalJson(manifest) + '\n');

    let stderr = '';
    let stdout = '';
    const before = process.memoryUsage().rss;
    const code = await main(['verify-bundle', dir, '--progress', 'plain'], {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      env: { PATH: process.env['PATH'] },
    });
    expect(code, stdout).toBe(0);
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
    expect(stdout).toContain(`bundle ok: ${files().length + 1} files match manifest.json`);
    const lines = stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^verifying .*: 100% \(1074 of 1074 MB\)$/);
    expect(lines.length).toBeGreaterThanOrEqual(5);

    // One byte in the middle of the big file: named, whatever its size.
    const fd = openSync(big, 'r+');
    writeSync(fd, Buffer.from([1]), 0, 1, 512 * 1024 * 1024);
    closeSync(fd);
    const bad = verifyBundle(dir);
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.differs).toEqual(['attempts/big.bin']);
  });
});
