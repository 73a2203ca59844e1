#!/usr/bin/env node
// Builds the fixture git repositories of the shipped cohorts and the quick-start
// example, deterministically, into examples/cohorts/fixtures/repos/<name>.
//
// Sources: examples/cohorts/fixtures/sources/<repo>/<NN-label>/, one directory per
// commit, applied in name order. Each holds commit.json
//   { "message": "...", "branch": "main", "parent": "<NN-label>", "delete": [paths], "run": [[argv...]] }
// and the files that commit adds or changes, at their paths in the repository.
// `parent` defaults to the previous commit of the same branch (none for the first);
// `run` commands (e.g. a build script of the fixture itself) run in the work tree
// before the commit.
//
// The same sources give the same commit ids on every machine: fixed author,
// committer and dates, no system or user git config, LF line endings, regular file
// modes, `git init -b main`. The ids are pinned below (task.yaml files pin the same
// ids): a build that produces another id fails rather than leaving a repository
// that no task can use. An existing repository whose refs are already at their
// pinned commits is left alone, so running this again is instant.
//
//   node scripts/build-fixtures.mjs            build what is missing or stale
//   node scripts/build-fixtures.mjs --print    build, then print every commit id (to pin new commits)
//   node scripts/build-fixtures.mjs --check    only say whether every repository is up to date and the verifier image loaded (exit 1 if not)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureVerifierImage } from './build-verifier-image.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCES = join(ROOT, 'examples', 'cohorts', 'fixtures', 'sources');
const REPOS = join(ROOT, 'examples', 'cohorts', 'fixtures', 'repos');

/** repo -> commit label -> the commit id every machine must produce. */
const PINS = {
  inventory: {
    '01-base': '8d901125bff43d763a9d6786c532b111ad883b1e',
  },
  ledger: {
    '01-base': '6f14ea11edd80450e6f6355c2685564fc6331446',
    '02-tax-rounding': 'abe0acb524c23cc45c8c52730e95514eb458c924',
    '03-sync-retries': '9884ee713b5504f43422efa33338760bddb43665',
    '04-month-off-by-one': '61ac4bc0b4fde89d764ae2292accbe7b502dc94e',
  },
  money: {
    '01-base': 'd0ffe58e9fa92f0520307d7278ef44d291bbbe0f',
    '02-format-amount': 'ca472ca00c6f3b41368b83b12c85b5e1709aed79',
    '03-parse-amount': 'a16d830865ea8ccea17b4b8b8e9a686f8366aaf7',
    '04-more-amounts': '5fad1821d9e066905e1f5d31760c368b3f1d11bb',
    '05-signed-amount': 'a58c379acbbbec295e3c0b39e2bdc84e70213106',
    '06-statement-line': 'e70d26fd34b6545f9e9a71066dd8d50a52d6f954',
    '07-is-amount': '09eb11164be86bd448219e1b22e9e9a96983b056',
    '08-csv-amount': 'e3a0760d5855deb90a8ad7dbac876b4f23109184',
    '09-sum-cents': 'b3b4b41c4d035e27f87d6048e5b18a8b32bc56ef',
    '10-split-cents': '0a96dfb4184b9148dcc4d92f358abe532182214c',
    '11-more-formats': '24398792613deb691130d436b90d6ef9e0591ace',
    '12-format-total': '71606d4e46d57df846e268590577c5644cc7599b',
    '13-format-range': 'c2620892647f96eee25e4c6dbdca25bd77aefb25',
    '14-unit-price': '61b2b9551f668b37082a9ef2c0559a6fa71fcd8b',
    '15-receipt-line': '864d42d62ceb1235a9278f777694e0c2a21421d6',
  },
  orders: {
    '01-base': 'd57a4cf3da247ca0e518bd3f10648a5d5af4e49c',
    '02-refund-currency': '3581e39349dbb919ed15b45ffa37167b7756b11b',
    '03-empty-order': 'fce88e3915df49d78054d0440c80fae69f597f83',
    '04-quantity-check': '5c8ef9134beec9d1fb1a2a2534f917dc64b25c25',
  },
  shop: {
    '01-checkout': '79206e24038db108df9e3d12e443048ca7a095f0',
    '02-discounts': '41a50e3e774bffa1551c9f5d8c4e339faf47511c',
    '03-receipts': '3bb56369c6db71eff3ff3534890d4d156f4cc946',
    '04-module-tests': '55f88895b287f3450967b4f0a9844b74e64a48d1',
    '05-catalog': 'dd8af3f9ee24535bda5aae1619faf42a716d6897',
  },
  textkit: {
    '01-base': '75d2b136e31346ca12aa46d546d9544d0fa90a79',
  },
};

/** 2026-01-01T00:00:00Z; each later commit of a repository is one hour later. */
const EPOCH = 1767225600;

const args = new Set(process.argv.slice(2));
for (const a of args) {
  if (!['--print', '--check', '--quiet'].includes(a)) {
    console.error(`build-fixtures: unknown option ${a} (options: --print, --check, --quiet)`);
    process.exit(2);
  }
}
const log = (line) => {
  if (!args.has('--quiet')) console.log(line);
};

/** A private, empty HOME: no user config, hooks, signing or templates reach git. */
const HOME = mkdtempSync(join(tmpdir(), 'pairbench-fixtures-home-'));
process.on('exit', () => rmSync(HOME, { recursive: true, force: true }));

function git(cwd, gitArgs, date) {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME,
    XDG_CONFIG_HOME: HOME,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: join(HOME, 'gitconfig'),
    GIT_TERMINAL_PROMPT: '0',
    LANG: 'C',
    LC_ALL: 'C',
    TZ: 'UTC',
    GIT_AUTHOR_NAME: 'Fixture Author',
    GIT_AUTHOR_EMAIL: 'fixtures@example.invalid',
    GIT_COMMITTER_NAME: 'Fixture Author',
    GIT_COMMITTER_EMAIL: 'fixtures@example.invalid',
    ...(date !== undefined ? { GIT_AUTHOR_DATE: `${date} +0000`, GIT_COMMITTER_DATE: `${date} +0000` } : {}),
  };
  const config = ['-c', 'core.autocrlf=false', '-c', 'core.fileMode=true', '-c', 'core.hooksPath=/dev/null', '-c', 'commit.gpgsign=false', '-c', 'init.templateDir=', '-c', 'advice.detachedHead=false'];
  return execFileSync('git', [...config, ...gitArgs], { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Every file below `dir` (relative paths with '/'), commit.json excluded. */
function filesOf(dir, rel = '') {
  const out = [];
  for (const name of readdirSync(join(dir, rel)).sort()) {
    const p = rel ? `${rel}/${name}` : name;
    if (!rel && name === 'commit.json') continue;
    if (statSync(join(dir, p)).isDirectory()) out.push(...filesOf(dir, p));
    else out.push(p);
  }
  return out;
}

function loadRepo(name) {
  const dir = join(SOURCES, name);
  const commits = readdirSync(dir)
    .filter((d) => statSync(join(dir, d)).isDirectory())
    .sort()
    .map((label) => {
      const meta = JSON.parse(readFileSync(join(dir, label, 'commit.json'), 'utf8'));
      return { label, dir: join(dir, label), message: meta.message, branch: meta.branch ?? 'main', parent: meta.parent, delete: meta.delete ?? [], run: meta.run ?? [] };
    });
  const tips = new Map();
  for (const c of commits) {
    c.parent ??= tips.get(c.branch);
    if (c.parent && !commits.some((x) => x.label === c.parent)) throw new Error(`${name}/${c.label}: parent ${c.parent} is not a commit of ${name}`);
    tips.set(c.branch, c.label);
  }
  return { name, commits, tips };
}

/** The repository's branches at their pinned commits? */
function upToDate(repo) {
  const dir = join(REPOS, repo.name);
  if (!existsSync(join(dir, '.git'))) return false;
  try {
    for (const [branch, label] of repo.tips) {
      const want = PINS[repo.name]?.[label];
      if (!want || git(dir, ['rev-parse', '--verify', '-q', `refs/heads/${branch}^{commit}`]) !== want) return false;
    }
    return git(dir, ['status', '--porcelain']) === '';
  } catch {
    return false;
  }
}

/** Builds the repository in a temp directory beside its place, then moves it there. Returns label -> id. */
function build(repo) {
  mkdirSync(REPOS, { recursive: true });
  const tmp = join(REPOS, `.${repo.name}.tmp-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp);
  const ids = {};
  try {
    git(tmp, ['init', '-q', '-b', 'main']);
    repo.commits.forEach((c, i) => {
      if (c.parent) git(tmp, ['checkout', '-q', '-B', c.branch, ids[c.parent]]);
      else if (i > 0) throw new Error(`${repo.name}/${c.label}: only the first commit may have no parent`);
      for (const p of c.delete) rmSync(join(tmp, p), { recursive: true, force: true });
      for (const p of filesOf(c.dir)) {
        mkdirSync(dirname(join(tmp, p)), { recursive: true });
        // LF endings whatever the checkout did to the sources; a new, never executable file.
        writeFileSync(join(tmp, p), readFileSync(join(c.dir, p), 'utf8').replace(/\r\n/g, '\n'), { mode: 0o644 });
      }
      for (const argv of c.run) execFileSync(argv[0] === 'node' ? process.execPath : argv[0], argv.slice(1), { cwd: tmp, stdio: ['ignore', 'ignore', 'inherit'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME, LANG: 'C', TZ: 'UTC' } });
      git(tmp, ['add', '-A']);
      git(tmp, ['commit', '-q', '--no-verify', '-m', c.message], EPOCH + 3600 * i);
      ids[c.label] = git(tmp, ['rev-parse', 'HEAD']);
    });
    git(tmp, ['checkout', '-q', 'main']);
    const wrong = Object.entries(ids).filter(([label, id]) => PINS[repo.name]?.[label] && PINS[repo.name][label] !== id);
    if (wrong.length) {
      throw new Error(
        `${repo.name}: built commit ids differ from the pinned ones (the sources changed, or this machine's git is not deterministic):\n` +
          wrong.map(([label, id]) => `  ${label}: pinned ${PINS[repo.name][label]}, built ${id}`).join('\n') +
          '\n  if the sources changed on purpose, update PINS in scripts/build-fixtures.mjs and the commits in every task.yaml that pins them',
      );
    }
    const dest = join(REPOS, repo.name);
    rmSync(dest, { recursive: true, force: true });
    renameSync(tmp, dest);
    return ids;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

const names = readdirSync(SOURCES).filter((d) => statSync(join(SOURCES, d)).isDirectory()).sort();
let failed = false;
const printed = {};
for (const name of names) {
  const repo = loadRepo(name);
  const where = relative(process.cwd(), join(REPOS, name)) || '.';
  if (upToDate(repo)) {
    log(`${where}: up to date`);
    if (args.has('--print')) printed[name] = Object.fromEntries(repo.commits.map((c) => [c.label, PINS[name][c.label]]));
    continue;
  }
  if (args.has('--check')) {
    log(`${where}: missing or stale`);
    failed = true;
    continue;
  }
  try {
    const ids = build(repo);
    const unpinned = Object.keys(ids).filter((label) => !PINS[name]?.[label]);
    log(`${where}: built (${repo.commits.length} commit${repo.commits.length === 1 ? '' : 's'})${unpinned.length ? `; not pinned yet: ${unpinned.join(', ')}` : ''}`);
    printed[name] = ids;
  } catch (e) {
    console.error(`build-fixtures: ${e instanceof Error ? e.message : String(e)}`);
    failed = true;
  }
}
if (args.has('--print')) console.log(JSON.stringify(printed, null, 2));
else {
  // The pinned verifier image of primer-context-file (docker). Not having it fails only that
  // cohort's verification, so it is said here and never stops the repositories' build.
  const image = ensureVerifierImage({ check: args.has('--check') });
  if (image.ok) log(image.message);
  else {
    console.error(`build-fixtures: ${image.message}`);
    if (args.has('--check')) failed = true;
  }
}
process.exit(failed ? 1 : 0);
