import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { byteProgress, type ProgressMode } from '../byte-progress.js';
import { defineCommand, EXIT, fail } from '../command.js';
import { printJson } from '../json-output.js';

export const verifyBundleCommand = defineCommand({
  name: 'verify-bundle',
  synopsis: 'verify-bundle DIR',
  summary: 're-check a bundle against its manifest.json',
  usage: 'pairbench verify-bundle DIR [options]',
  about: `Re-hashes every file of a bundle against its manifest.json and names each file that
differs, is missing, or is extra, and prints the root digest (SHA-256 of
manifest.json). A manifest rewritten to match edited files still passes that check:
bind the bundle to the run that made it with --root (the digest the export printed)
or --key (the public key of an export --sign).`,
  options: [
    ['root', 'DIGEST', 'the published root digest (sha256:...) the bundle must have'],
    ['key', 'PUB', 'an Ed25519 public key (PEM): manifest.sig.json must verify'],
    ['progress', 'MODE', 'auto (a bar on a terminal for a bundle over 64 MiB), plain (a line\nat every tenth of the bytes hashed), none'],
    ['json', null, 'machine-readable output'],
    ['help', null, 'this help'],
  ],
  operands: { min: 1, max: 1, message: 'verify-bundle takes exactly one DIR' },
  config: false,
  exits: '0 the bundle matches (and its root / signature check out); 1 it does not;\n2 usage error.',
  async run({ io, json, values, operands }) {
    const dir = operands[0]!;
    const expectedRoot = values.root;
    const { checkSignature, mismatchedFiles, rootDigest, verifyBundle } = await import('../../report/bundle.js');
    if (!existsSync(dir)) return fail(io, json, [{ message: `${dir} does not exist`, hint: 'give the directory pairbench export --out wrote' }]);
    if (!existsSync(join(dir, 'manifest.json')))
      return fail(io, json, [{ message: `${dir} is not a bundle: it has no manifest.json`, hint: 'give the directory pairbench export --out wrote' }]);
    let publicKey: string | undefined;
    if (values.key !== undefined) {
      try {
        publicKey = readFileSync(values.key, 'utf8');
      } catch (e) {
        return fail(io, json, [{ message: `cannot read the public key ${values.key}: ${(e as Error).message}` }]);
      }
    }
    const mode = json ? 'none' : ((values.progress ?? 'auto') as ProgressMode);
    let progress: ((bytes: number) => void) | undefined;
    const r = verifyBundle(dir, (bytes, total) => (progress ??= byteProgress(io.stderr, io.env, mode, `verifying ${dir}`, total))(bytes));
    const root = rootDigest(dir);
    const rootProblem =
      expectedRoot === undefined || !root.ok
        ? null
        : root.value === expectedRoot.replace(/^sha256:/, '')
          ? null
          : `root digest ${root.value} is not the expected ${expectedRoot}: this is not the bundle that was published`;
    const signature = publicKey === undefined ? null : checkSignature(dir, publicKey);
    const ok = r.ok && rootProblem === null && (signature === null || signature.ok);
    if (json) {
      printJson(io.stdout, {
        ok,
        root_digest: root.ok ? root.value : null,
        ...(r.ok ? { files: r.value.files } : r.error),
        ...(rootProblem ? { root_problem: rootProblem } : {}),
        ...(signature ? { signature: signature.ok ? { ok: true, key_id: signature.value.key_id } : { ok: false, problem: signature.error } } : {}),
      });
      return ok ? EXIT.ok : EXIT.nodeFailed;
    }
    const lines: string[] = [];
    if (r.ok) lines.push(`bundle ok: ${r.value.files} files match manifest.json`);
    else lines.push('bundle does NOT match manifest.json:', ...mismatchedFiles(r.error).map(({ file, how }) => `${how.padEnd(9)}${file}`));
    if (root.ok) lines.push(`root digest sha256:${root.value}`);
    if (rootProblem) lines.push(`NOT the published bundle: ${rootProblem}`);
    if (signature) lines.push(signature.ok ? `signature ok (Ed25519, key ${signature.value.key_id.slice(0, 16)})` : `signature NOT valid: ${signature.error}`);
    io.stdout.write(lines.join('\n') + '\n');
    return ok ? EXIT.ok : EXIT.nodeFailed;
  },
});
