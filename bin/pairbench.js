#!/usr/bin/env node
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` / `npm run build`).
import { existsSync } from 'node:fs';
const entry = new URL('../dist/cli/index.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('pairbench: not built yet; run `npm run build` in the pairbench directory\n');
  process.exit(2);
}
await import(entry.href);
