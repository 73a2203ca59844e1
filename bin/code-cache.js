// Loads the bundled CLI (dist/bundle/*.cjs) with V8's code cache: each chunk's compiled code
// is kept beside the bundle after the first run and handed back to V8 on the next, so a start
// does not parse and compile ~1 MB of JavaScript again. Node 20 has no compile cache of its
// own (module.enableCompileCache is Node 22), and none at all for ES modules: the bundle is
// CommonJS for that reason.
//
// A cache file is named by the SHA-1 of its chunk's source: V8 itself checks only the
// source's length, so a rebuilt chunk of the same length must never find the old code.
// V8 rejects a cache made by another V8 version or with other flags; the chunk is then
// compiled as usual and its cache written again. Caches live in the bundle's own directory
// (never a shared temporary one, where another user could plant compiled code); where that
// is not writable, nothing is cached and nothing fails.
'use strict';
const { hash } = require('node:crypto');
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const Module = require('node:module');
const { createRequire } = Module;
const { basename, dirname, join, sep } = require('node:path');
const vm = require('node:vm');

/**
 * Requires `entry` (a file in `dir`), compiling every .cjs file it loads from `dir` or from
 * `alsoFrom` (directories of other generated CommonJS, e.g. the schema validators) through
 * the code cache kept in `dir`.
 */
function requireWithCodeCache(dir, entry, alsoFrom = []) {
  const cacheDir = join(dir, '.v8-cache');
  const cached = [dir, ...alsoFrom].map((d) => d + sep);
  const fresh = [];
  const compile = Module.prototype._compile;
  Module.prototype._compile = function (content, filename) {
    if (!(filename.endsWith('.cjs') && cached.some((d) => filename.startsWith(d)))) return compile.call(this, content, filename);
    const cacheFile = join(cacheDir, `${basename(filename)}.${hash('sha1', content)}`);
    let cachedData;
    try {
      cachedData = readFileSync(cacheFile);
    } catch {
      // first run of this chunk
    }
    const script = new vm.Script(Module.wrap(content), {
      filename,
      ...(cachedData ? { cachedData } : {}),
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    });
    if (!cachedData || script.cachedDataRejected) fresh.push({ script, cacheFile });
    const wrapper = script.runInThisContext({ displayErrors: true });
    return wrapper.call(this.exports, this.exports, createRequire(filename), this, filename, dirname(filename));
  };
  // Written at exit: the cache then holds the functions this run compiled lazily too.
  process.once('exit', () => {
    if (!fresh.length) return;
    try {
      mkdirSync(cacheDir, { recursive: true });
      for (const { script, cacheFile } of fresh) {
        const tmp = `${cacheFile}.${process.pid}.tmp`;
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, cacheFile);
      }
    } catch {
      // a read-only install: every start compiles, as without a cache
    }
  });
  return createRequire(join(dir, entry))(join(dir, entry));
}

module.exports = { requireWithCodeCache };
