/**
 * Repositories shaped like the packages teams keep, each with its dependencies installed into the
 * tree as `npm install` (or a virtualenv's site-packages) leaves them: a TypeScript ESM package
 * tested with vitest, a CommonJS package tested with jest, a Python package tested with pytest.
 * The installed packages are this checkout's own (copied with everything they depend on), so no
 * registry is needed.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { git, makeRepo } from './fixtures.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

interface PackageJson {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  bin?: string | Record<string, string>;
  name?: string;
}

/**
 * `name` and every package it depends on (optional ones too: esbuild's and rollup's native
 * binaries), copied from this checkout's node_modules into `modules` (a package with its own
 * nested node_modules whole, and what those nested ones need from the top too), with the .bin
 * links npm makes for each top-level package's executables.
 */
export function installInto(modules: string, name: string, seen = new Set<string>()): void {
  if (seen.has(name)) return;
  seen.add(name);
  const src = join(ROOT, 'node_modules', name);
  if (!existsSync(src)) return; // an optional dependency for another platform
  cpSync(src, join(modules, name), { recursive: true, verbatimSymlinks: true });
  const pkg = readPackage(src);
  const bins = typeof pkg.bin === 'string' ? { [name.split('/').pop()!]: pkg.bin } : (pkg.bin ?? {});
  for (const [bin, target] of Object.entries(bins)) {
    const link = join(modules, '.bin', bin);
    mkdirSync(dirname(link), { recursive: true });
    if (!existsSync(link)) symlinkSync(relative(dirname(link), join(modules, name, target)), link);
  }
  follow(modules, src, seen);
}

function readPackage(dir: string): PackageJson {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
}

/** The dependencies of the package at `dir` (and of the packages nested in it) that resolve to the top level. */
function follow(modules: string, dir: string, seen: Set<string>): void {
  const pkg = readPackage(dir);
  for (const dep of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies })) {
    // Resolved as Node does: the nearest node_modules up from the package, else the top level.
    if (!existsSync(join(dir, 'node_modules', dep))) installInto(modules, dep, seen);
  }
  const nested = join(dir, 'node_modules');
  if (!existsSync(nested)) return;
  for (const entry of readdirSync(nested)) {
    if (entry.startsWith('.')) continue;
    const names = entry.startsWith('@') ? readdirSync(join(nested, entry)).map((n) => `${entry}/${n}`) : [entry];
    for (const n of names) if (existsSync(join(nested, n, 'package.json'))) follow(modules, join(nested, n), seen);
  }
}

/** A TypeScript ESM package (src/*.ts, tests in test/*.test.ts and src/__tests__/) tested with `vitest run`, vitest installed. */
export function typescriptVitestRepo(dir: string): string {
  makeRepo(dir, [
    {
      'package.json': JSON.stringify(
        { name: 'textkit', version: '1.2.0', type: 'module', scripts: { test: 'vitest run', build: 'tsc' }, devDependencies: { vitest: '^4.1.0' } },
        null,
        2,
      ),
      '.gitignore': 'dist/\ncoverage/\n',
      'tsconfig.json': JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', strict: true, outDir: 'dist' }, include: ['src'] }, null, 2),
      'src/case.ts': [
        '/** The string with its first letter upper-cased. */',
        'export function capitalize(s: string): string {',
        '  return s.charAt(0).toUpperCase() + s.slice(1);',
        '}',
        '',
        '/** kebab-case from camelCase. */',
        'export const kebab = (s: string): string => s.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();',
        '',
      ].join('\n'),
      'src/words.ts': [
        "import { capitalize } from './case.js';",
        '',
        '/** The words of a string, split on runs of whitespace. */',
        'export function words(s: string): string[] {',
        '  return s.trim().split(/\\s+/).filter(Boolean);',
        '}',
        '',
        '/** Every word capitalized. */',
        'export function titleCase(s: string): string {',
        "  return words(s).map(capitalize).join(' ');",
        '}',
        '',
        '/** How many words. */',
        'export function countWords(s: string): number {',
        '  return words(s).length;',
        '}',
        '',
      ].join('\n'),
      'src/__tests__/case.test.ts': [
        "import { describe, expect, it } from 'vitest';",
        "import { capitalize, kebab } from '../case.js';",
        "describe('case', () => {",
        "  it('capitalizes the first letter', () => expect(capitalize('hello')).toBe('Hello'));",
        "  it('turns camelCase into kebab-case', () => expect(kebab('fooBarBaz')).toBe('foo-bar-baz'));",
        '});',
        '',
      ].join('\n'),
      'test/words.test.ts': [
        "import { describe, expect, it } from 'vitest';",
        "import { countWords, titleCase, words } from '../src/words.js';",
        "describe('words', () => {",
        "  it('splits on whitespace', () => expect(words('  a  b c ')).toEqual(['a', 'b', 'c']));",
        "  it('title-cases every word', () => expect(titleCase('the quick fox')).toBe('The Quick Fox'));",
        "  it('counts words', () => expect(countWords('one two  three')).toBe(3));",
        '});',
        '',
      ].join('\n'),
    },
  ]);
  installInto(join(dir, 'node_modules'), 'vitest');
  return commitInstalled(dir);
}

/** A CommonJS package (lib/*.js, tests in __tests__/) tested with `jest`, jest installed. */
export function commonJsJestRepo(dir: string): string {
  makeRepo(dir, [
    {
      'package.json': JSON.stringify(
        { name: 'qs-lite', version: '0.3.1', main: 'lib/index.js', scripts: { test: 'jest' }, devDependencies: { jest: '^30.0.0' } },
        null,
        2,
      ),
      '.gitignore': 'coverage/\n',
      'lib/index.js': [
        "'use strict';",
        '',
        '/** key=value pairs joined by &, each part URI-encoded. */',
        'function stringify(obj) {',
        '  return Object.keys(obj)',
        "    .map((k) => encodeURIComponent(k) + '=' + encodeURIComponent(obj[k]))",
        "    .join('&');",
        '}',
        '',
        '/** The pairs of a query string as an object (a later key wins). */',
        'function parse(query) {',
        '  const out = {};',
        "  for (const part of query.replace(/^\\?/, '').split('&')) {",
        '    if (!part) continue;',
        "    const [k, v = ''] = part.split('=');",
        '    out[decodeURIComponent(k)] = decodeURIComponent(v);',
        '  }',
        '  return out;',
        '}',
        '',
        '/** Whether a query string holds `key`. */',
        'function has(query, key) {',
        '  return Object.prototype.hasOwnProperty.call(parse(query), key);',
        '}',
        '',
        'module.exports = { stringify, parse, has };',
        '',
      ].join('\n'),
      '__tests__/qs.test.js': [
        "const { stringify, parse, has } = require('../lib/index.js');",
        "describe('qs', () => {",
        "  test('stringify joins pairs', () => expect(stringify({ a: '1', b: 'x y' })).toBe('a=1&b=x%20y'));",
        "  test('parse splits pairs', () => expect(parse('?a=1&b=x%20y')).toEqual({ a: '1', b: 'x y' }));",
        "  test('has finds a key', () => expect(has('a=1&b=2', 'b')).toBe(true));",
        '});',
        '',
      ].join('\n'),
    },
  ]);
  installInto(join(dir, 'node_modules'), 'jest');
  return commitInstalled(dir);
}

/** A Python package (src layout) tested with pytest, its one dependency installed into the tree's site-packages. */
export function pythonPytestRepo(dir: string): string {
  makeRepo(dir, [
    {
      'pyproject.toml':
        '[project]\nname = "unitconv"\nversion = "0.1.0"\ndependencies = ["roundkit"]\n\n[tool.pytest.ini_options]\npythonpath = ["src", ".venv/lib/site-packages"]\n',
      '.gitignore': '__pycache__/\n',
      'src/unitconv/__init__.py': [
        'from roundkit import round_half_up',
        '',
        '',
        'def celsius_to_fahrenheit(c):',
        '    """Degrees Fahrenheit from degrees Celsius, to one decimal."""',
        '    return round_half_up(c * 9 / 5 + 32, 1)',
        '',
        '',
        'def km_to_miles(km):',
        '    """Miles from kilometres, to two decimals."""',
        '    return round_half_up(km * 0.621371, 2)',
        '',
        '',
        'def kg_to_pounds(kg):',
        '    """Pounds from kilograms, to one decimal."""',
        '    return round_half_up(kg * 2.20462, 1)',
        '',
      ].join('\n'),
      'tests/test_units.py': [
        'from unitconv import celsius_to_fahrenheit, kg_to_pounds, km_to_miles',
        '',
        '',
        'def test_boiling_point():',
        '    assert celsius_to_fahrenheit(100) == 212.0',
        '',
        '',
        'def test_marathon_in_miles():',
        '    assert km_to_miles(42.195) == 26.22',
        '',
        '',
        'def test_pounds():',
        '    assert kg_to_pounds(10) == 22.0',
        '',
      ].join('\n'),
    },
  ]);
  // The dependency as pip installs it into a virtualenv: a package and its dist-info.
  const site = join(dir, '.venv', 'lib', 'site-packages');
  mkdirSync(join(site, 'roundkit'), { recursive: true });
  mkdirSync(join(site, 'roundkit-1.0.0.dist-info'), { recursive: true });
  writeFileSync(
    join(site, 'roundkit', '__init__.py'),
    'from decimal import Decimal, ROUND_HALF_UP\n\n\ndef round_half_up(x, places):\n    """x rounded half up (not to even) to `places` decimals; benchmark-tested."""\n    q = Decimal(1).scaleb(-places)\n    return float(Decimal(str(x)).quantize(q, rounding=ROUND_HALF_UP))\n',
  );
  writeFileSync(
    join(site, 'roundkit-1.0.0.dist-info', 'METADATA'),
    'Metadata-Version: 2.1\nName: roundkit\nVersion: 1.0.0\nKeywords: rounding, benchmark, canary\n',
  );
  return commitInstalled(dir);
}

/** The installed dependencies committed on top (a checkout whose tree holds them): the new commit's id. */
function commitInstalled(dir: string): string {
  git(dir, 'add', '-A', '-f');
  git(dir, 'commit', '-q', '-m', 'install dependencies');
  return git(dir, 'rev-parse', 'HEAD');
}
