#!/usr/bin/env node
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` / `npm run build`).
// dist/bundle/ holds the same code in a few CommonJS chunks (scripts/bundle-cli.mjs), loaded
// through V8's code cache (code-cache.js): it starts in less than half the time. It is used
// only while newer than the compiled entry, so a `tsc` run since (which rewrites every file
// of dist/) is never shadowed by a stale bundle. This directory is CommonJS (package.json
// here): an ES module entry costs every start ~8 ms more of Node's module loader.
'use strict';
const { statSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');

const root = join(__dirname, '..');
const compiled = join(root, 'dist', 'cli', 'index.js');
const bundled = join(root, 'dist', 'bundle', 'main.cjs');
const mtime = (path) => statSync(path, { throwIfNoEntry: false })?.mtimeMs;
const compiledAt = mtime(compiled);
if (compiledAt === undefined) {
  process.stderr.write('pairbench: not built yet; run `npm run build` in the pairbench directory\n');
  process.exit(2);
}
if ((mtime(bundled) ?? -Infinity) >= compiledAt) {
  const argv = process.argv.slice(2);
  // The whole-plan memo (pipeline/memo/): a command it may answer prints what its last run printed
  // when nothing that run read has changed, before anything else of pairbench loads; otherwise the
  // run is recorded, from here on, for the next.
  // A bundle built before the memo existed has none: it then runs without one.
  const memoFile = join(root, 'dist', 'bundle', 'memo.cjs');
  const memo = mtime(memoFile) === undefined ? undefined : require(memoFile);
  const memoized = memo !== undefined && memo.MEMOIZED_COMMANDS.includes(argv[0]) && memo.memoEnabled(process.env);
  (memoized ? memo.replay(argv, process.env, process.cwd()) : Promise.resolve(undefined)).then((replayed) => {
    if (replayed !== undefined) {
      process.exitCode = replayed;
      return;
    }
    const recording = memoized ? memo.startRecording(argv, process.env, process.cwd()) : undefined;
    const { requireWithCodeCache } = require('./code-cache.js');
    // The schema validators (schemas/validators.generated.cjs, 0.5 MB) are compiled through the cache too.
    const { main } = requireWithCodeCache(join(root, 'dist', 'bundle'), 'main.cjs', [join(root, 'schemas')]);
    main(argv, { stdout: process.stdout, stderr: process.stderr, env: process.env }).then((code) => {
      recording?.finish(code);
      process.exitCode = code;
    });
  });
} else {
  import(pathToFileURL(compiled).href);
}
