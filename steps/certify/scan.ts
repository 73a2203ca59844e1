import { hash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import picomatch from 'picomatch';
import type { Task } from '../task.js';
import { decodedVariants, lineAt, lineStarts } from '../../text/decode.js';
import { diffLines } from '../../text/diff-lines.js';
import { MultiSearch } from '../../text/multi-search.js';
import { VENDORED_PACKAGE_DIR, vendoredPackageDir } from './vendored.js';
import type { Sha256 } from '../../pipeline/digest.js';
import type { ReadTreeOptions, TreeFileRead } from '../../pipeline/store/tree-reader.js';

/**
 * The static half of `certify`: every agent-visible surface (the prompt, the
 * materialized tree, each arm's treatment files) is scanned for text that would
 * let an agent see the answer or know it is being benchmarked. Pure functions over
 * file contents; only `surfaceFromDir` touches the disk, and only to read.
 */

export type FindingClass = 'solution-leak' | 'verifier-leak' | 'benchmark-awareness' | 'canary' | 'instructions-survived';

export type SurfaceKind = 'prompt' | 'tree' | 'treatment';

export interface SurfaceFile {
  path: string;
  text: string;
}

/** A file below a surface directory that was not read as text, and why. */
export interface SkippedFile {
  path: string;
  reason: 'binary' | 'too-large' | 'not-regular';
}

/** A file of third-party code a package manager installed (node_modules, vendor/, site-packages), held as its bytes. */
export interface InstalledFile {
  path: string;
  digest: string;
  /** Absent when the file holds no anchor of a needle (surfaceFromStoredTree): it cannot match. */
  bytes?: Buffer;
}

export interface Surface {
  kind: SurfaceKind;
  /** e.g. 'prompt', 'tree', 'treatment:treatment' */
  name: string;
  /** Relative paths with '/'; the prompt is one file named 'prompt'. */
  files: SurfaceFile[];
  /** Files present but not scanned as text; their paths still count for instructions-survived. */
  skipped?: SkippedFile[];
  /**
   * A tree's third-party files, as bytes: searched for copies of the answer and the canary by
   * their anchors first (one byte search per needle), read as text only where one is found.
   */
  installed?: InstalledFile[];
}

export interface Finding {
  surface: string;
  path: string;
  /** 1-based */
  line: number;
  class: FindingClass;
  /** The matched text, truncated to 120 characters. */
  match: string;
  /** What it matched, in words. */
  detail: string;
}

export interface ScanInputs {
  task: Task;
  surfaces: Surface[];
  /** Benchmark-awareness words added to DEFAULT_BENCHMARK_WORDS. */
  extraWords?: readonly string[];
  /** The hidden verifier files (the contents of task.verifier.filesDir). */
  verifierFiles?: SurfaceFile[];
}

export const DEFAULT_BENCHMARK_WORDS: readonly string[] = Object.freeze([
  'SWE-bench',
  'swebench',
  'Terminal-Bench',
  'terminal bench',
  'pairbench',
  'harbor task',
  'hidden test',
  'hidden tests',
  'hidden verifier',
  'benchmark',
  'evaluation harness',
  'canary',
]);

/** Minimum trimmed length of a distinctive line of the reference solution. */
export const SOLUTION_MIN_LENGTH = 12;
/** Minimum trimmed length of a distinctive line of the hidden verifier (files or patch). */
export const VERIFIER_MIN_LENGTH = 20;
/** Files larger than this are not read by `surfaceFromDir`. */
export const MAX_FILE_BYTES = 1024 * 1024;
const BINARY_SNIFF_BYTES = 8192;
const MATCH_MAX = 120;

/** The prompt as a surface: one file named 'prompt'. */
export function promptSurface(task: Task): Surface {
  return { kind: 'prompt', name: 'prompt', files: [{ path: 'prompt', text: task.prompt }] };
}

/**
 * Every regular file below `dir`, sorted by path. Binary files (a NUL byte in the
 * first 8 KB), files over 1 MB and non-regular entries (symlinks, sockets) are
 * listed in `skipped` instead of `files`. With `installed`, third-party files (below
 * node_modules/<name>/, vendor/..., site-packages/...) are held as bytes in `installed`:
 * the scan decodes one only where it holds an anchor of a needle (surfaceFromStoredTree's
 * rule, for a tree on disk).
 */
export function surfaceFromDir(kind: SurfaceKind, name: string, dir: string, o: { installed?: boolean } = {}): Surface {
  const files: SurfaceFile[] = [];
  const skipped: SkippedFile[] = [];
  const installed: InstalledFile[] = [];
  const walk = (abs: string, rel: string): void => {
    const entries = readdirSync(abs, { withFileTypes: true }).sort((a, b) => compare(a.name, b.name));
    for (const e of entries) {
      const childAbs = join(abs, e.name);
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        walk(childAbs, childRel);
        continue;
      }
      if (!e.isFile()) {
        skipped.push({ path: childRel, reason: 'not-regular' });
        continue;
      }
      if (lstatSync(childAbs).size > MAX_FILE_BYTES) {
        skipped.push({ path: childRel, reason: 'too-large' });
        continue;
      }
      const bytes = readFileSync(childAbs);
      if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
        skipped.push({ path: childRel, reason: 'binary' });
        continue;
      }
      if (o.installed && VENDORED_PACKAGE_DIR.test(childRel)) installed.push({ path: childRel, digest: hash('sha256', bytes), bytes });
      else files.push({ path: childRel, text: bytes.toString('utf8') });
    }
  };
  walk(dir, '');
  files.sort((a, b) => compare(a.path, b.path));
  skipped.sort((a, b) => compare(a.path, b.path));
  return { kind, name, files, skipped, ...(o.installed ? { installed: installed.sort((a, b) => compare(a.path, b.path)) } : {}) };
}

/** What the scan reads a stored tree through (pipeline/store/tree-reader.ts). */
export interface StoredTreeReader {
  readTreeFiles(root: Sha256, o: ReadTreeOptions): Promise<TreeFileRead[]>;
}

/**
 * A tree surface from a stored tree, without writing the tree out, with surfaceFromDir's limits
 * (binary, over 1 MB, links). Its third-party files (`installed`: below node_modules/<name>/,
 * vendor/..., site-packages/...) keep their bytes only when they hold one of `anchors`
 * (installedAnchors): the rest of a dependency tree is never decoded as text. Rejects with the
 * signal's reason when it is aborted.
 */
export async function surfaceFromStoredTree(
  name: string,
  root: Sha256,
  store: StoredTreeReader,
  o: { anchors: Buffer[][]; signal?: AbortSignal },
): Promise<Surface> {
  const read = await store.readTreeFiles(root, {
    sniff: BINARY_SNIFF_BYTES,
    maxSize: MAX_FILE_BYTES,
    filterBelow: VENDORED_PACKAGE_DIR,
    keepIf: o.anchors,
    signal: o.signal,
  });
  const files: SurfaceFile[] = [];
  const skipped: SkippedFile[] = [];
  const installed: InstalledFile[] = [];
  for (const f of read) {
    if (f.state === 'symlink') skipped.push({ path: f.path, reason: 'not-regular' });
    else if (f.state === 'too-large' || f.state === 'binary') skipped.push({ path: f.path, reason: f.state });
    else if (f.filtered) installed.push({ path: f.path, digest: f.digest, ...(f.bytes ? { bytes: f.bytes } : {}) });
    else files.push({ path: f.path, text: f.bytes!.toString('utf8') });
  }
  const byPath = (a: { path: string }, b: { path: string }) => compare(a.path, b.path);
  return { kind: 'tree', name, files: files.sort(byPath), skipped: skipped.sort(byPath), installed: installed.sort(byPath) };
}

/** All findings over all surfaces, deduplicated, sorted by (surface, path, line, class, match, detail). */
export function scanSurfaces(inputs: ScanInputs): Finding[] {
  const it = scanning(inputs);
  for (;;) {
    const r = it.next();
    if (r.done) return r.value;
  }
}

/** Files scanned between two turns of the event loop. */
const FILES_PER_TURN = 256;

/** scanSurfaces, yielding to the event loop as it goes: an interrupt (`signal`) stops it within a turn. */
export async function scanSurfacesInterruptibly(inputs: ScanInputs, signal: AbortSignal): Promise<Finding[]> {
  const it = scanning(inputs);
  for (let n = 1; ; n++) {
    const r = it.next();
    if (r.done) return r.value;
    if (n % FILES_PER_TURN === 0) {
      await new Promise((resolve) => setImmediate(resolve));
      signal.throwIfAborted();
    }
  }
}

/**
 * What every match in a third-party file contains, as byte strings: for each text needle, its
 * runs with no whitespace (there, text is compared as written, whitespace aside, so a match holds
 * each of them), longest first; for the canary, itself as written, in lower and in upper case. A
 * file that holds no needle's every run, nor the canary, cannot match: it is not read as text.
 */
function anchorsOf(needles: readonly { needle: string }[], canary: string | undefined): Buffer[][] {
  const out = needles.map((n) => [...new Set(n.needle.split(' ').filter(Boolean))].sort((a, b) => b.length - a.length).map((t) => Buffer.from(t)));
  if (canary) for (const c of new Set([canary, canary.toLowerCase(), canary.toUpperCase()])) out.push([Buffer.from(c)]);
  return out.filter((a) => a.length);
}

/** Each needle as the text is compared: folded, whitespace collapsed, and with no whitespace at all. */
function comparedNeedles(task: Task, verifierFiles: SurfaceFile[]) {
  return textNeedlesOf(task, verifierFiles).map((n) => {
    const needle = normalize(fold(n.text));
    return { ...n, needle, bare: needle.replaceAll(' ', '') };
  });
}

/** The anchors of a task's needles (anchorsOf): what surfaceFromStoredTree keeps a third-party file for. */
export function installedAnchors(task: Task, verifierFiles: SurfaceFile[] = []): Buffer[][] {
  return anchorsOf(comparedNeedles(task, verifierFiles), task.canary?.trim() || undefined);
}

function* scanning(inputs: ScanInputs): Generator<void, Finding[]> {
  const { task } = inputs;
  const textNeedles = comparedNeedles(task, inputs.verifierFiles ?? []);
  const names = testNameNeedles(task).filter(notTheCodeAskedFor(task, inputs.surfaces));
  const words = wordMatchers([...DEFAULT_BENCHMARK_WORDS, ...(inputs.extraWords ?? [])]);
  const canary = task.canary?.trim() ? new RegExp(escapeRegExp(task.canary.trim()), 'gi') : null;

  const found = new Map<string, Finding>();
  const add = (f: Finding): void => {
    const g = { ...f, match: truncate(f.match) };
    found.set(JSON.stringify([g.surface, g.path, g.line, g.class, g.match, g.detail]), g);
  };

  // Lines of the starting tree the reference solution keeps as they are: a solution line found
  // there is the file's own code (a repeated idiom, a helper the stub left alone), not a leak.
  const kept = task.solution.patch ? keptLines(task.solution.patch) : new Map<string, Set<number>>();
  const keptInTree = (surface: Surface, path: string, line: number, cls: string, encoded: boolean) =>
    surface.kind === 'tree' && cls === 'solution-leak' && !encoded && kept.has(path) && !kept.get(path)!.has(line);

  // Every needle in one pass over each text (the folded lines, and the text with no whitespace).
  const lineSearch = new MultiSearch(textNeedles.map((n) => n.needle));
  const bareIndex = textNeedles.map((_, i) => i).filter((i) => textNeedles[i]!.bare.length >= 8);
  const bareSearch = new MultiSearch(bareIndex.map((i) => textNeedles[i]!.bare));
  const anchors = anchorsOf(textNeedles, task.canary?.trim() || undefined);

  for (const surface of inputs.surfaces) {
    const authored = surface.kind !== 'tree';
    if (surface.kind === 'tree') {
      const paths = [...surface.files.map((f) => f.path), ...(surface.skipped ?? []).map((s) => s.path), ...(surface.installed ?? []).map((f) => f.path)];
      for (const path of paths) {
        const why = instructionsFile(path);
        if (why) add({ surface: surface.name, path, line: 1, class: 'instructions-survived', match: path, detail: why });
      }
    }
    // Each file as written, and everything it decodes to (to a fixed point, bounded: decode.ts). Third-party
    // code a package manager installed (node_modules, vendor/, site-packages) is searched as written only,
    // for copies of the answer and the canary: the agent did not write it, so its words are no awareness.
    const thirdParty = (path: string) => surface.kind === 'tree' && vendoredPackageDir(path) !== null;
    const holdsAnchor = (bytes: Buffer) => anchors.some((runs) => runs.every((r) => bytes.includes(r)));
    const installedText = (surface.installed ?? []).flatMap((f) => (f.bytes && holdsAnchor(f.bytes) ? [{ path: f.path, text: f.bytes.toString('utf8') }] : []));
    const variants = [...surface.files, ...installedText].flatMap((f) =>
      thirdParty(f.path) ? preparedVariants(f).filter((v) => !v.encoded) : preparedVariants(f),
    );
    for (const { file, encoded, folded, searchable } of variants) {
      yield;
      const installed = thirdParty(file.path);
      let rawStarts: number[] | undefined;
      const at = (offset: number) => ({
        surface: surface.name,
        path: file.path,
        line: encoded ? encoded.lineOf(offset) : lineAt((rawStarts ??= lineStarts(file.text)), offset),
      });
      const how = encoded ? ` (decoded: ${encoded.chain.join(' -> ')})` : '';

      // Solution and verifier lines: substrings of the folded lines (Unicode NFKC, invisible
      // characters gone, look-alike letters mapped, whitespace collapsed), or of the whole text
      // with no whitespace at all (a re-spaced copy, or one split across lines).
      if (textNeedles.length) {
        const t = searchable();
        const hits = textNeedles.map(() => new Set<number>());
        lineSearch.search(t.norm, (n, start) => hits[n]!.add(lineAt(t.starts, start)));
        if (!installed) bareSearch.search(t.bare, (k, start) => hits[bareIndex[k]!]!.add(lineAt(t.bareStarts, start)));
        const lineOfIndex = (i: number) => (encoded ? encoded.lineOf(t.rawLineStarts[i - 1] ?? 0) : i);
        textNeedles.forEach((n, k) => {
          for (const line of hits[k]!) {
            if (keptInTree(surface, file.path, lineOfIndex(line), n.class, Boolean(encoded))) continue;
            add({ surface: surface.name, path: file.path, line: lineOfIndex(line), class: n.class, match: n.text, detail: n.detail + how });
          }
        });
      }

      for (const n of installed ? [] : names) {
        if (n.authoredOnly && !authored) continue;
        if (n.notInTree && surface.kind === 'tree') continue;
        for (let i = folded.indexOf(n.name); i !== -1; i = folded.indexOf(n.name, i + 1)) {
          if (!atBoundaries(folded, i, n.name.length)) continue;
          add({ ...at(i), class: 'verifier-leak', match: n.name, detail: n.detail + how });
        }
      }

      if (canary) {
        for (const m of folded.matchAll(canary)) {
          add({ ...at(m.index), class: 'canary', match: m[0], detail: `canary ${abbreviate(task.canary!.trim())}${how}` });
        }
      }

      if (encoded || installed) continue; // benchmark words are looked for as written, in what the repository wrote
      for (const w of words) {
        for (const m of file.text.matchAll(w.re)) {
          add({ ...at(m.index), class: 'benchmark-awareness', match: m[0], detail: `benchmark word "${w.word}"` });
        }
      }
    }
  }
  const solutionLines = new Set(textNeedles.filter((n) => n.class === 'solution-leak').map((n) => n.text)).size;
  return withoutIdioms([...found.values()], solutionLines, inputs.surfaces).sort(compareFindings);
}

/**
 * A solution line in the starting tree is a leak when it is part of a copy of the answer, not
 * when it is one of the tree's own idioms. Third-party code under node_modules (vendor/,
 * site-packages/, ...) shares idioms with any solution (`if (!opts) { opts = {}; }` is in tape
 * and in minimist): there, solution lines are a leak only when one vendored package holds at
 * least half of the solution's distinctive lines, and two of them when it has more than one (a
 * copy of the answer, whole or in part), counted over the package so that a copy split across
 * files is still one. In the repository's
 * own files the same holds per file, and a line the tree carries in two files or more
 * (`'use strict';` at the top of eighteen of them) is its idiom; a line planted once is a leak.
 */
function withoutIdioms(findings: Finding[], solutionLines: number, surfaces: readonly Surface[]): Finding[] {
  const trees = new Set(surfaces.filter((s) => s.kind === 'tree').map((s) => s.name));
  const inTree = (f: Finding) => f.class === 'solution-leak' && trees.has(f.surface);
  const groupOf = (f: Finding) => `${f.surface}\0${vendoredPackageDir(f.path) ?? f.path}`;
  const held = new Map<string, Set<string>>();
  const filesOf = new Map<string, Set<string>>();
  for (const f of findings.filter(inTree)) {
    held.set(groupOf(f), (held.get(groupOf(f)) ?? new Set()).add(f.match));
    filesOf.set(f.match, (filesOf.get(f.match) ?? new Set()).add(`${f.surface}\0${f.path}`));
  }
  // In a vendored package, one line of a longer solution is no copy (`return Object.keys(obj)` is in ci-info): two at least.
  const copy = (f: Finding) => {
    const n = held.get(groupOf(f))!.size;
    return vendoredPackageDir(f.path) === null ? n * 2 >= solutionLines : n * 2 >= solutionLines && (n >= 2 || solutionLines <= 1);
  };
  return findings.filter((f) => {
    if (!inTree(f) || copy(f)) return true;
    return vendoredPackageDir(f.path) === null && filesOf.get(f.match)!.size < 2;
  });
}

export function compareFindings(a: Finding, b: Finding): number {
  return (
    compare(a.surface, b.surface) ||
    compare(a.path, b.path) ||
    a.line - b.line ||
    compare(a.class, b.class) ||
    compare(a.match, b.match) ||
    compare(a.detail, b.detail)
  );
}

// ---------------------------------------------------------------------------
// Unified diffs

/**
 * For each file a patch modifies (by its path in the old tree): the old file's lines the patch
 * removes. A line of such a file not in its set is one the patch keeps (in a map, a file the
 * patch only adds is absent; so is a file it does not touch, where every line is a possible copy).
 */
export function keptLines(patch: string): Map<string, Set<number>> {
  const out = new Map<string, Set<number>>();
  let removed: Set<number> | undefined;
  let oldLine = 0;
  let oldLeft = 0;
  let newLeft = 0;
  for (const line of patch.split(/\r?\n/)) {
    const hunk = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(line);
    if (hunk) {
      oldLine = Number(hunk[1]);
      oldLeft = hunk[2] === undefined ? 1 : Number(hunk[2]);
      newLeft = hunk[3] === undefined ? 1 : Number(hunk[3]);
      continue;
    }
    if (oldLeft > 0 || newLeft > 0) {
      const c = line[0];
      if (c === '-' && oldLeft > 0) {
        removed?.add(oldLine++);
        oldLeft--;
      } else if (c === '+' && newLeft > 0) newLeft--;
      else if (c === ' ' || line === '') {
        oldLine++;
        oldLeft--;
        newLeft--;
      }
      continue;
    }
    const from = /^--- (?:a\/)?(.+?)\s*$/.exec(line);
    if (from) {
      removed = from[1] === '/dev/null' ? undefined : new Set<number>();
      if (removed) out.set(from[1]!, removed);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Distinctive lines

const KEYWORDS = new Set(
  (
    'abstract and as assert async await begin bool boolean break byte case catch char class const continue def default defer del delete do done double elif else end enum esac ' +
    'except export extends false fi final finally float fn for from func function go if impl implements import in instanceof int interface is lambda let long match mod ' +
    'mut new nil none not null of or package pass private protected pub public raise return self short static str string struct super switch then this throw throws ' +
    'true try type typeof undefined unless use var void when where while with yield None True False NULL'
  ).split(' '),
);

const IDENT = /[\p{L}_$][\p{L}\p{N}_$]*/gu;
const LITERAL = /\d{2,}|(["'`])(?:(?!\1)[^\\]|\\.)+\1/u;

/** Latin look-alikes (Cyrillic, Greek) a copy can hide behind: mapped to the letter they imitate. */
const CONFUSABLES: Record<string, string> = {
  а: 'a',
  е: 'e',
  о: 'o',
  р: 'p',
  с: 'c',
  у: 'y',
  х: 'x',
  і: 'i',
  ј: 'j',
  ѕ: 's',
  ԁ: 'd',
  һ: 'h',
  ӏ: 'l',
  ԛ: 'q',
  ԝ: 'w',
  А: 'A',
  В: 'B',
  Е: 'E',
  К: 'K',
  М: 'M',
  Н: 'H',
  О: 'O',
  Р: 'P',
  С: 'C',
  Т: 'T',
  Х: 'X',
  І: 'I',
  Ј: 'J',
  Ѕ: 'S',
  α: 'a',
  ο: 'o',
  ν: 'v',
  ρ: 'p',
  τ: 't',
  ι: 'i',
  κ: 'k',
  Α: 'A',
  Β: 'B',
  Ε: 'E',
  Ζ: 'Z',
  Η: 'H',
  Ι: 'I',
  Κ: 'K',
  Μ: 'M',
  Ν: 'N',
  Ο: 'O',
  Ρ: 'P',
  Τ: 'T',
  Υ: 'Y',
  Χ: 'X',
};
const CONFUSABLE_RE = new RegExp(`[${Object.keys(CONFUSABLES).join('')}]`, 'gu');

/**
 * Text as certify compares it: Unicode NFKC (full-width and compatibility forms),
 * zero-width and soft-hyphen characters removed, Cyrillic and Greek look-alikes mapped
 * to Latin. A paraphrase is out of scope: only copies are found.
 */
export function fold(s: string): string {
  return s
    .normalize('NFKC')
    .replace(/[\u200B-\u200D\u2060\uFEFF\u00AD]/g, '')
    .replace(CONFUSABLE_RE, (c) => CONFUSABLES[c] ?? c);
}

interface Decoded {
  file: SurfaceFile;
  /** Set for text decoded from the file: by which chain, and the line of the file each offset came from. */
  encoded?: { chain: string[]; lineOf(offset: number): number };
}

/** A file or a text decoded from it, with the forms the scan compares needles against. */
interface Prepared extends Decoded {
  folded: string;
  /** The folded lines normalised (and their starts), and the same with no whitespace at all: made on first use. */
  searchable(): { norm: string; starts: number[]; bare: string; bareStarts: number[]; rawLineStarts: number[] };
}

// A file's decoded variants and folded forms depend on its text alone: kept by text (up to a
// bound), so scanning one tree again -- a generator's next candidate, certify's next task of the
// same repository -- decodes none of its files twice.
const PREPARED_CACHE_CHARS = 64 * 1024 * 1024;
type PreparedText = Omit<Prepared, 'file'> & { text: string };
const preparedCache = new Map<string, PreparedText[]>();
let preparedChars = 0;

/** The file, and everything it decodes to (decode.ts), each as a text of its own. */
function preparedVariants(file: SurfaceFile): Prepared[] {
  let variants: PreparedText[] | undefined = preparedCache.get(file.text);
  if (!variants) {
    variants = decodedVariants(file.text).map((v): PreparedText => {
      const folded = fold(v.text);
      let forms: ReturnType<Prepared['searchable']> | undefined;
      const searchable = () => {
        if (forms) return forms;
        const lines = folded.split('\n').map(normalize);
        const bareStarts: number[] = [];
        const bareParts: string[] = [];
        let bareLength = 0;
        for (const line of lines) {
          bareStarts.push(bareLength);
          const b = line.replaceAll(' ', '');
          bareParts.push(b);
          bareLength += b.length;
        }
        const norm = lines.join('\n');
        return (forms = { norm, starts: lineStarts(norm), bare: bareParts.join(''), bareStarts, rawLineStarts: lineStarts(v.text) });
      };
      return { text: v.text, ...(v.chain.length ? { encoded: { chain: v.chain, lineOf: v.lineOf } } : {}), folded, searchable };
    });
    const chars = variants.reduce((n, v) => n + v.text.length, 0);
    if (chars <= PREPARED_CACHE_CHARS) {
      // Oldest first out (a Map iterates in insertion order) until the new entry fits.
      for (const [text, old] of preparedCache) {
        if (preparedChars + chars <= PREPARED_CACHE_CHARS) break;
        preparedCache.delete(text);
        preparedChars -= old.reduce((n, v) => n + v.text.length, 0);
      }
      preparedCache.set(file.text, variants);
      preparedChars += chars;
    }
  }
  return variants.map(({ text, ...rest }): Prepared => ({ ...rest, file: rest.encoded ? { path: file.path, text } : file }));
}

/** Whitespace runs collapsed to one space, trimmed. */
export function normalize(line: string): string {
  return line.replace(/\s+/g, ' ').trim();
}

/**
 * A line worth searching for: at least `minLength` characters after trimming, and
 * either two identifier-like tokens that are not keywords, or a literal (a
 * number of two or more digits, a non-empty string). `}`, `return;`, `});`,
 * `else {` and blank lines never qualify.
 */
export function isDistinctive(line: string, minLength: number): boolean {
  const t = normalize(line);
  if (t.length < minLength) return false;
  let idents = 0;
  for (const m of t.matchAll(IDENT)) {
    if (!KEYWORDS.has(m[0])) idents++;
    if (idents >= 2) return true;
  }
  return LITERAL.test(t);
}

/** Lines that look like imports are boilerplate a hidden test file shares with the tree. */
const IMPORT_LINE = /^(?:import\b|from\s+\S+\s+import\b|#\s*include\b|using\b|use\b|package\b|require\b|(?:const|let|var)\s+.*=\s*require\()/;

interface TextNeedle {
  text: string;
  class: FindingClass;
  detail: string;
}

/**
 * Added lines of a patch that are distinctive and new: not also removed or kept as
 * context by the same patch, nor part of such a line (a stub's kept signature
 * `function add(a, b) { throw ... }` contains the solution's `function add(a, b) {`):
 * text the starting tree already has is no leak.
 */
function addedNeedles(patch: string, minLength: number): string[] {
  const d = diffLines(patch);
  const existingLines = [...d.removed, ...d.context].map(normalize);
  const existing = new Set(existingLines);
  const out = new Set<string>();
  for (const line of d.added) {
    const n = normalize(line);
    if (existing.has(n) || !isDistinctive(n, minLength) || existingLines.some((e) => e.includes(n))) continue;
    out.add(n);
  }
  return [...out];
}

function textNeedlesOf(task: Task, verifierFiles: SurfaceFile[]): TextNeedle[] {
  const byText = new Map<string, TextNeedle>();
  const put = (n: TextNeedle) => {
    const key = `${n.class}\0${n.text}\0${n.detail}`;
    if (!byText.has(key)) byText.set(key, n);
  };
  if (task.solution.patch) {
    for (const text of addedNeedles(task.solution.patch, SOLUTION_MIN_LENGTH))
      put({ text, class: 'solution-leak', detail: 'added line of the reference solution' });
  }
  const hiddenPatch = task.verifier.patch ?? task.verifier.scanOnlyPatch;
  if (hiddenPatch) {
    for (const text of addedNeedles(hiddenPatch, VERIFIER_MIN_LENGTH)) put({ text, class: 'verifier-leak', detail: 'added line of the verifier patch' });
  }
  for (const { text, file } of verifierLines(verifierFiles)) put({ text, class: 'verifier-leak', detail: `line of hidden verifier file ${file}` });
  return [...byText.values()].sort((a, b) => compare(a.text, b.text) || compare(a.detail, b.detail));
}

/** The distinctive lines of the hidden verifier files (not imports), each once, with the file it is in. */
function verifierLines(files: SurfaceFile[]): { text: string; file: string }[] {
  const out: { text: string; file: string }[] = [];
  for (const file of [...files].sort((a, b) => compare(a.path, b.path))) {
    const seen = new Set<string>();
    for (const line of file.text.split('\n')) {
      const text = normalize(line);
      if (seen.has(text) || IMPORT_LINE.test(text) || !isDistinctive(text, VERIFIER_MIN_LENGTH)) continue;
      seen.add(text);
      out.push({ text, file: file.path });
    }
  }
  return out;
}

/** The lines of the hidden verifier an agent must never be shown (audit looks for them in what it was shown). */
export function distinctiveVerifierLines(files: SurfaceFile[]): string[] {
  return [...new Set(verifierLines(files).map((l) => l.text))];
}

// ---------------------------------------------------------------------------
// Verifier test names

/** Single common words that make poor test-name needles. */
export const TEST_NAME_STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'test tests testing check checks build lint format types typecheck compile unit integration smoke sanity basic simple ' +
    'default main works passes pass fail module import imports setup install example examples health value result error errors ' +
    'output input string number empty first second third last other about after before there which their would could should ' +
    'these those where every always never because works valid invalid update create delete read write'
  ).split(' '),
);

interface NameNeedle {
  name: string;
  detail: string;
  /** Derived short names are searched only in surfaces the benchmark authored (prompt, treatments). */
  authoredOnly: boolean;
  /** PASS_TO_PASS tests exist before the change by definition: not searched in the tree. */
  notInTree: boolean;
}

function usableName(name: string): boolean {
  return name.length >= 4 && !TEST_NAME_STOP_WORDS.has(name.toLowerCase());
}

/** The test function a full id names: `path::Class::test_x[param]` and `test_x (mod.Class)` give `test_x`. */
export function shortTestName(name: string): string {
  const unittest = /^([\p{L}_][\p{L}\p{N}_]*) \([\p{L}\p{N}_.]+\)$/u.exec(name);
  if (unittest) return unittest[1]!;
  const last = name.split('::').pop()!;
  return last.replace(/\[.*\]$/s, '');
}

function testNameNeedles(task: Task): NameNeedle[] {
  const out = new Map<string, NameNeedle>();
  const put = (n: NameNeedle) => {
    const prev = out.get(n.name);
    // A name that is both fail-to-pass and pass-to-pass (or both full and derived) keeps the widest reach.
    if (!prev) out.set(n.name, n);
    else out.set(n.name, { ...prev, authoredOnly: prev.authoredOnly && n.authoredOnly, notInTree: prev.notInTree && n.notInTree });
  };
  const lists: [Record<string, string>, boolean][] = [
    [task.verifier.failToPass, false],
    [task.verifier.passToPass, true],
  ];
  for (const [tests, notInTree] of lists) {
    for (const full of Object.keys(tests).sort(compare)) {
      if (usableName(full)) put({ name: full, detail: `verifier test name ${full}`, authoredOnly: false, notInTree });
      const short = shortTestName(full);
      if (short !== full && usableName(short)) put({ name: short, detail: `verifier test name ${short} (of ${full})`, authoredOnly: true, notInTree });
    }
  }
  return [...out.values()].sort((a, b) => compare(a.name, b.name));
}

/**
 * A test named by one identifier that the code the task asks for defines or uses (a test
 * `capitalize` of a function `capitalize` in an allowed path) names that code, not the test:
 * a prompt must be able to say what to implement. Any other test name stays a needle.
 */
function notTheCodeAskedFor(task: Task, surfaces: readonly Surface[]): (n: NameNeedle) => boolean {
  const allowed = picomatch(task.allowedPaths, { dot: true });
  const code = surfaces.filter((s) => s.kind === 'tree').flatMap((s) => s.files.filter((f) => allowed(f.path)));
  const identifiers = new Set(code.flatMap((f) => f.text.match(/[A-Za-z_$][\w$]*/g) ?? []));
  return (n) => !(n.authoredOnly && /^[A-Za-z_$][\w$]*$/.test(n.name) && identifiers.has(n.name));
}

const WORD_CHAR = /[\p{L}\p{N}_]/u;

/** A name that starts or ends with a word character must not continue a longer identifier there. */
function atBoundaries(text: string, index: number, length: number): boolean {
  const first = text[index]!;
  const last = text[index + length - 1]!;
  if (WORD_CHAR.test(first) && index > 0 && WORD_CHAR.test(text[index - 1]!)) return false;
  if (WORD_CHAR.test(last) && index + length < text.length && WORD_CHAR.test(text[index + length]!)) return false;
  return true;
}

// ---------------------------------------------------------------------------
// Benchmark words

interface WordMatcher {
  word: string;
  re: RegExp;
}

/**
 * Case-insensitive, bounded by anything that is not a letter or digit (so
 * `swebench_runner` and `(benchmark)` match, `benchmarks` and `pairbenchConfig`
 * do not). A space, '-' or '_' inside a word matches any run of those, so
 * 'terminal bench' also finds 'Terminal-Bench' and 'terminal_bench' (and the two
 * default spellings are one matcher, reported under the first).
 */
function wordMatchers(words: string[]): WordMatcher[] {
  const seen = new Set<string>();
  const out: WordMatcher[] = [];
  for (const raw of words) {
    const word = raw.trim();
    if (!word) continue;
    const body = word
      .toLowerCase()
      .split(/[\s_-]+/)
      .map(escapeRegExp)
      .join('[\\s_-]+');
    // Words that differ only in case or separators ('Terminal-Bench', 'terminal bench') are one matcher.
    if (seen.has(body)) continue;
    seen.add(body);
    out.push({ word, re: new RegExp(`(?<![\\p{L}\\p{N}])${body}(?![\\p{L}\\p{N}])`, 'giu') });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Auto-loaded agent instructions

const INSTRUCTION_BASENAMES = new Set(['CLAUDE.md', 'AGENTS.md', 'GEMINI.md', '.cursorrules', '.windsurfrules', '.mcp.json']);
const INSTRUCTION_DIRS = new Set(['.claude', '.cursor']);
const INSTRUCTION_PATHS = new Set(['.github/copilot-instructions.md', '.vscode/mcp.json']);

/** Why `path` would be auto-loaded by an agent, or null. */
export function instructionsFile(path: string): string | null {
  const parts = path.split('/');
  const base = parts[parts.length - 1]!;
  if (INSTRUCTION_BASENAMES.has(base)) return `auto-loaded agent file ${base} survived redaction`;
  const dir = parts.slice(0, -1).find((p) => INSTRUCTION_DIRS.has(p));
  if (dir) return `file under ${dir}/ survived redaction`;
  if (INSTRUCTION_PATHS.has(path)) return `auto-loaded agent file ${path} survived redaction`;
  return null;
}

// ---------------------------------------------------------------------------
// Small helpers

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function truncate(s: string): string {
  if (s.length <= MATCH_MAX) return s;
  let cut = s.slice(0, MATCH_MAX);
  const code = cut.charCodeAt(cut.length - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut = cut.slice(0, -1);
  return cut;
}

function abbreviate(s: string): string {
  return s.length > 8 ? `${s.slice(0, 8)}...` : s;
}
