#!/usr/bin/env node
// Bundles the compiled CLI (dist/cli/index.js and what it imports) into dist/bundle/: a few
// chunks instead of ~110 modules, which Node otherwise resolves, reads and compiles one by one
// at every start (~100 ms of a 280 ms `plan`). Lazily imported parts stay lazy (their own
// chunks). Left outside, loaded from node_modules when used: typescript (the generators'
// parser, 9 MB), dockerode (optional native add-ons) and bullmq/ioredis (the worker queue).
// bin/pairbench.js runs the bundle only while it is newer than dist/cli/index.js: a `tsc`
// since then rewrites dist/ and the compiled modules run until this script runs again.
import { existsSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ENTRY = join(ROOT, 'dist', 'cli', 'index.js');
const OUT = join(ROOT, 'dist', 'bundle');
const EXTERNAL = /^(typescript|dockerode|bullmq|ioredis)(\/|$)/;

if (!existsSync(ENTRY)) {
  console.error(`bundle-cli: ${ENTRY} is missing; run tsc -p tsconfig.json first`);
  process.exit(2);
}
// Written beside, then swapped in: an interrupted build never leaves half a bundle where bin/ looks.
const tmp = `${OUT}.tmp-${process.pid}`;
rmSync(tmp, { recursive: true, force: true });
await build({
  input: ENTRY,
  platform: 'node',
  logLevel: 'warn',
  external: (id) => EXTERNAL.test(id),
  output: { dir: tmp, format: 'esm', entryFileNames: 'index.js', chunkFileNames: '[name]-[hash].js' },
});
rmSync(OUT, { recursive: true, force: true });
renameSync(tmp, OUT);
