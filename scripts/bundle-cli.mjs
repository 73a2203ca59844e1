#!/usr/bin/env node
// Bundles the compiled CLI (dist/cli/main.js and what it imports) into dist/bundle/: a few
// CommonJS chunks instead of ~110 ES modules, which Node otherwise resolves, reads and compiles
// one by one at every start; bin/code-cache.js then keeps V8's compiled code of each chunk
// (Node 20 caches no compiled code for ES modules). Lazily imported parts stay lazy (their own
// chunks). Left outside, loaded from node_modules when used: typescript (the generators'
// parser, 9 MB), dockerode (optional native add-ons) and bullmq (the worker queue; its Redis client, ioredis, is a dependency of ours: bullmq 6 loads it as an optional peer).
// bin/pairbench.js runs the bundle only while it is newer than dist/cli/index.js: a `tsc`
// since then rewrites dist/ and the compiled modules run until this script runs again.
import { existsSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
// main.js, not index.js: CommonJS has no top-level await (bin/pairbench.js calls main).
const ENTRY = join(ROOT, 'dist', 'cli', 'main.js');
const OUT = join(ROOT, 'dist', 'bundle');
const EXTERNAL = /^(typescript|dockerode|bullmq)(\/|$)/;

if (!existsSync(ENTRY)) {
  console.error(`bundle-cli: ${ENTRY} is missing; run tsc -p tsconfig.json first`);
  process.exit(2);
}
// Written beside, then swapped in: an interrupted build never leaves half a bundle where bin/ looks.
const tmp = `${OUT}.tmp-${process.pid}`;
rmSync(tmp, { recursive: true, force: true });
await build({
  input: { main: ENTRY },
  platform: 'node',
  logLevel: 'warn',
  external: (id) => EXTERNAL.test(id),
  // A module imported lazily in one place and statically in another simply stays where the
  // static import puts it: worth no warning at every build.
  onLog: (level, log, handler) => (log.code === 'INEFFECTIVE_DYNAMIC_IMPORT' ? undefined : handler(level, log)),
  output: {
    dir: tmp,
    format: 'cjs',
    // import() of a package left outside becomes require() in a promise: a script compiled from
    // V8's code cache (bin/code-cache.js) has no dynamic-import callback on Node 20, so an
    // import() there fails on every start but the first ("A dynamic import callback was not
    // specified").
    dynamicImportInCjs: false,
    entryFileNames: '[name].cjs',
    chunkFileNames: '[name]-[hash].cjs',
    // What every start loads (the entry's static imports, all the way down) in one chunk, not ~40.
    codeSplitting: { groups: [{ name: 'startup', tags: ['$initial'] }] },
  },
});
// The whole-plan memo (pipeline/memo/, entry cli/memo-entry.ts), one file of its own: bin/pairbench.js loads it before
// anything else for a memoizable command, to answer from the memo or to record the run, so it
// must not pull in the startup chunk.
await build({
  input: join(ROOT, 'dist', 'cli', 'memo-entry.js'),
  platform: 'node',
  logLevel: 'warn',
  output: { file: join(tmp, 'memo.cjs'), format: 'cjs' },
});
rmSync(OUT, { recursive: true, force: true });
renameSync(tmp, OUT);
