#!/usr/bin/env node
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` / `npm run build`).
// dist/bundle/ holds the same code in a few chunks (scripts/bundle-cli.mjs), which starts
// ~100 ms sooner; it is used only while newer than the compiled entry, so a `tsc` run since
// (which rewrites every file of dist/) is never shadowed by a stale bundle.
import { statSync } from 'node:fs';
const compiled = new URL('../dist/cli/index.js', import.meta.url);
const bundled = new URL('../dist/bundle/index.js', import.meta.url);
const mtime = (url) => statSync(url, { throwIfNoEntry: false })?.mtimeMs;
const compiledAt = mtime(compiled);
if (compiledAt === undefined) {
  process.stderr.write('pairbench: not built yet; run `npm run build` in the pairbench directory\n');
  process.exit(2);
}
await import((mtime(bundled) ?? -Infinity) >= compiledAt ? bundled.href : compiled.href);
