#!/usr/bin/env node
// npm's `prepare`: builds dist/ (tsc, the CLI bundle, the viewer) unless dist/ is already the
// build of these sources.
//
// Why not always build: npm 11 runs a package's prepare again whenever `npx pairbench` is run
// inside the package's own checkout (its "self-execution" installs the checkout into npm's npx
// cache), so a fresh clone paid a second full build, about 13 s of CPU, on its first `npx
// pairbench`, right after `npm ci` had built it; every job of the README's sharded workflow
// did.
//
// The stamp, dist/.prepare-stamp.json, holds a digest of the build's inputs and one of its
// outputs, by content (a copied checkout keeps its stamp; mtimes would not). Both must match to
// skip. The inputs are derived, not listed: every source file under the directories
// tsconfig.json includes, plus the build's own files (the viewer's sources, the scripts, schemas,
// bin/, package.json, the lock that pins the compilers, tsconfig.json); names starting with a
// dot (bench/.cache, a bench's stores) and node_modules are not sources. The outputs are every file
// under dist/ but V8's code cache, which bin/ writes as the CLI runs. A build run some other way
// (tsc alone) changes dist/ and so invalidates the stamp; one that writes the same bytes still
// leaves the compiled entry newer than the bundle, which bin/pairbench.js then no longer runs (nor
// its memo), so that asks for a build too. --force builds anyway; --check only says whether a build
// is due (exit 1) and why.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
const STAMP = join(DIST, '.prepare-stamp.json');
const NOT_OUTPUTS = new Set([join(DIST, 'bundle', '.v8-cache'), STAMP]);

const notSource = (name) => name.startsWith('.') || name === 'node_modules';

/**
 * Digest of the files under `paths` (files or directories, relative to ROOT), by path and
 * content; a missing one counts as missing. `skip`: absolute paths left out.
 */
function digest(paths, skip = new Set(), isSource = () => true) {
  const h = createHash('sha256');
  const visit = (abs, rel) => {
    if (skip.has(abs) || !isSource(rel.slice(rel.lastIndexOf('/') + 1))) return;
    let st;
    try {
      st = lstatSync(abs);
    } catch {
      h.update(`missing\0${rel}\0`);
      return;
    }
    if (st.isSymbolicLink()) h.update(`link\0${rel}\0${readlinkSync(abs)}\0`);
    else if (st.isDirectory()) for (const name of readdirSync(abs).sort()) visit(join(abs, name), `${rel}/${name}`);
    else h.update(`file\0${rel}\0${st.size}\0`).update(readFileSync(abs));
  };
  for (const p of [...paths].sort()) visit(join(ROOT, p), p);
  return h.digest('hex');
}

function inputs() {
  const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8'));
  const own = ['viewer-app', 'scripts', 'schemas', 'bin', 'package.json', 'package-lock.json', 'tsconfig.json'];
  return digest(new Set([...(tsconfig.include ?? []), ...own]), new Set(), (name) => !notSource(name));
}

const outputs = () => digest(['dist'], NOT_OUTPUTS);

/** bin/pairbench.js's own rule: the bundle runs only while it is not older than the compiled entry. */
function bundleShadowed() {
  const at = (p) => statSync(join(DIST, p), { throwIfNoEntry: false })?.mtimeMs;
  const bundle = at('bundle/main.cjs');
  const compiled = at('cli/index.js');
  return bundle !== undefined && compiled !== undefined && bundle < compiled;
}

function stamped() {
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return null;
  }
}

const force = process.argv.includes('--force');
const before = inputs();
const stamp = stamped();
const stale =
  !stamp || !existsSync(DIST)
    ? 'no stamp'
    : stamp.inputs !== before
      ? 'sources changed'
      : stamp.outputs !== outputs()
        ? 'dist/ changed'
        : bundleShadowed()
          ? 'dist/cli/index.js is newer than the CLI bundle (a tsc since): bin/pairbench.js would not run the bundle'
          : null;
if (process.argv.includes('--check')) {
  console.log(stale ? `prepare: would build (${stale})` : 'prepare: up to date');
  process.exit(stale ? 1 : 0);
}
if (!force && !stale) {
  console.log('prepare: dist/ is the build of these sources (dist/.prepare-stamp.json); nothing to build (--force builds anyway)');
  process.exit(0);
}

rmSync(STAMP, { force: true });
const run = (file, args) => execFileSync(process.execPath, [file, ...args], { cwd: ROOT, stdio: 'inherit' });
run(createRequire(import.meta.url).resolve('typescript/bin/tsc'), ['-p', 'tsconfig.json']);
run(join(ROOT, 'scripts', 'bundle-cli.mjs'), []);
run(join(ROOT, 'scripts', 'build-viewer.mjs'), []);
// Sources edited during the build leave no stamp: the next prepare builds again.
if (inputs() === before) {
  writeFileSync(`${STAMP}.tmp`, `${JSON.stringify({ inputs: before, outputs: outputs() })}\n`);
  renameSync(`${STAMP}.tmp`, STAMP);
}
