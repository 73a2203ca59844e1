/**
 * Every command, declared once: its synopsis, what it does, the options it takes (with their
 * help), what its exit codes mean. The parser (cli/command-line.ts) and each command's --help
 * are both made from this table, so an option cannot be accepted without being documented,
 * nor documented without being accepted.
 */
export const EXIT = { ok: 0, nodeFailed: 1, usage: 2, interrupted: 130 } as const;

/** Every option pairbench knows: whether it takes a value, and its short letter. */
export const OPTIONS = {
  config: { value: true, short: 'c' },
  store: { value: true },
  json: { value: false },
  help: { value: false, short: 'h' },
  jobs: { value: true, short: 'j' },
  verbose: { value: false, short: 'v' },
  progress: { value: true },
  all: { value: false, short: 'a' },
  'max-size': { value: true },
  'dry-run': { value: false, short: 'n' },
  'keep-newer-than': { value: true },
  'if-idle': { value: false },
  repo: { value: true },
  commit: { value: true },
  seed: { value: true },
  count: { value: true },
  language: { value: true },
  'test-command': { value: true },
  out: { value: true },
  'add-to': { value: true },
  'fake-model': { value: false },
  repeats: { value: true },
  repair: { value: false },
  sign: { value: true },
  'harbor-layout': { value: false },
  public: { value: false },
  private: { value: false },
  key: { value: true },
  root: { value: true },
  'skip-canary': { value: false },
  'acknowledge-reset': { value: false },
  list: { value: false, short: 'l' },
  shard: { value: true },
  'remote-cache': { value: true },
  'cache-mode': { value: true },
  executor: { value: true },
  redis: { value: true },
  concurrency: { value: true },
  port: { value: true },
  host: { value: true },
} as const satisfies Record<string, { value: boolean; short?: string }>;
export type OptionName = keyof typeof OPTIONS;

export function isOptionName(name: string): name is OptionName {
  return Object.hasOwn(OPTIONS, name);
}

/** Parsed option values: a string for an option that takes one, true for a flag. */
export type OptionValues = { [K in OptionName]?: (typeof OPTIONS)[K]['value'] extends true ? string : boolean };

/** One option as a command documents it: `[name, placeholder or null for a flag, help]` (help lines joined by \n). */
type OptionDoc = readonly [OptionName, string | null, string];

interface CommandDoc {
  /** After "pairbench " in the command list: the command and its arguments. */
  synopsis: string;
  /** One line in the command list. */
  summary: string;
  usage: string;
  about: string;
  options: readonly OptionDoc[];
  /** How many operands it takes, and what to say otherwise (absent: none). */
  operands?: { min: number; max: number; message: string };
  /** Whether it reads a config (then it takes --config and --store, and lists the options every such command takes). */
  config: boolean;
  /** What each exit code means. */
  exits: string;
}

/** Any number of operands (node ids, cohorts). */
const ANY = { min: 0, max: Infinity, message: '' };

const CONFIG_ERROR = '2 usage or config error';
const REMOTE_CACHE = 'the remote cache tier (overrides cache.remote): read on a local miss,\nwritten after a node succeeds (see README "Remote cache")';

const COMMON: readonly OptionDoc[] = [
  ['config', 'FILE', 'the config (default: bench.config.yaml in the current directory)'],
  ['store', 'DIR', 'the store directory (default: store.path in the config, or .pairbench)'],
  ['json', null, 'machine-readable output on stdout (errors too: {schema_version, ok: false, errors})'],
  ['help', null, 'this help'],
];

export const COMMANDS = {
  init: {
    synopsis: 'init [DIR]',
    summary: 'scaffold a commented cohort and a first task (--repo PATH [--commit REV])',
    usage: 'pairbench init [DIR] --repo PATH [--commit REV] [options]',
    about: `Scaffolds a cohort in DIR (default: here): bench.config.yaml (two arms, with and
without the context file under test, every step commented), tasks/first-task/task.yaml
pinned to the full id of REV (default HEAD) of the repository at PATH, and
context/CLAUDE.md. What a person must write (the prompt, the verifier, the context) is
marked in place. Never overwrites a file.`,
    options: [
      ['repo', 'PATH', "a local git repository: the first task's starting point"],
      ['commit', 'REV', 'the commit (default HEAD), recorded as its full id'],
      ['test-command', 'CMD', "the first task's verifier (default: npm test when package.json\nhas a test script, python -m pytest -q for a Python project)"],
      ['fake-model', null, 'a scripted model (model/fake-model.json) instead of a provider:\ndoctor, probe and run work end to end before any key is set'],
      ['json', null, 'machine-readable output'],
      ['help', null, 'this help'],
    ],
    operands: { min: 0, max: 1, message: 'init takes at most one DIR' },
    config: false,
    exits: '0 written; 2 usage error, DIR already has a config (or one of the files), or PATH has no such commit.',
  },
  run: {
    synopsis: 'run [NODE...]',
    summary: 'build every stale node (or only NODE... and what they need)',
    usage: 'pairbench run [NODE...] [options]',
    about: `Builds every node whose key has no record in the store. Cached nodes are reused;
a failing node fails only the nodes downstream of it. NODE is a node id
(run/t1/treatment/2), a prefix of one (run/t1) or a step name; its upstream nodes
are built too.`,
    options: [
      ['jobs', 'N', 'how many nodes execute at once (default: concurrency.global, 4)'],
      ['verbose', null, 'also list cached nodes'],
      ['progress', 'MODE', 'auto (listr2 on a TTY, plain lines otherwise or when CI is set), plain, or none'],
      [
        'shard',
        'i/N',
        `build only this shard's nodes: those of the tasks that hash to shard i of N
(a task's chain stays in one shard); shared roots (a context step) run in any
shard that finds them uncached; nodes that gather tasks (analyze, export) are
left to a final run without --shard. Skipped nodes do not fail a shard (exit 0).`,
      ],
      ['remote-cache', 'URL', REMOTE_CACHE],
      ['cache-mode', 'MODE', 'read-write or read-only (a pull-request job: it never writes)'],
      [
        'executor',
        'redis://HOST:PORT/DB',
        `hand every node that must run to 'pairbench worker' processes through
BullMQ queues on this Redis (one queue per step kind; job id = the node's
key; concurrency.kinds limits hold across the fleet); needs the remote cache`,
      ],
    ],
    operands: ANY,
    config: true,
    exits: `0 every node built or cached (or left to another shard); 1 some node failed or was skipped; ${CONFIG_ERROR}, or a cohort's frozen field changed; 130 interrupted.`,
  },
  plan: {
    synopsis: 'plan [NODE...]',
    summary: 'dry run: each node as cached or to run, and why',
    usage: 'pairbench plan [NODE...] [options]',
    about: `Lists every node as cached or to run, and for each node to run WHY: which input
changed (from its key pre-image against the node's last build), that it is new,
that its stored output is corrupt, or which upstream runs first. Changes nothing.`,
    options: [['all', null, 'also list cached nodes (human output)']],
    operands: ANY,
    config: true,
    exits: `0 planned; ${CONFIG_ERROR}, or no node matches NODE.`,
  },
  explain: {
    synopsis: 'explain NODE',
    summary: "a node's key inputs, its record, and what changed since its last build",
    usage: 'pairbench explain NODE [options]',
    about: `Shows a node's key and the inputs it hashes (config slice, matrix values, file
digests, upstream output digests), its record when cached (outputs, log, time),
its last failure, and what changed since its last build.`,
    options: [],
    operands: { min: 1, max: 1, message: 'explain takes exactly one NODE' },
    config: true,
    exits: `0 explained; ${CONFIG_ERROR}, or no node matches NODE.`,
  },
  show: {
    synopsis: 'show NODE [OUTPUT]',
    summary: "print a node's stored output, a file inside it, or its log (--list)",
    usage: 'pairbench show NODE [OUTPUT] [options]',
    about: `Prints a node's stored output from the store: an output file (result.json,
verdict.json, ...), a path inside a directory output (tree/src/add.mjs), or its
log ("log"; for a failed node, the log of its last failure). Without OUTPUT, or
with a directory, lists the outputs (name, type, size, digest). The record shown
is the one this config plans for the node; a stale node shows what this config's
last run built (said on stderr). A record the remote cache supplied has its bytes
fetched from it when shown. Exit 1 when the node has not been built (or its bytes
cannot be had).`,
    options: [
      ['list', null, "list instead of printing (an output file's entry)"],
      ['remote-cache', 'URL', 'where to fetch the bytes of a record the remote cache supplied (overrides cache.remote; read only)'],
    ],
    operands: { min: 1, max: 2, message: 'show takes a NODE and, optionally, one OUTPUT' },
    config: true,
    exits: `0 shown; 1 the node has not been built; ${CONFIG_ERROR}, or no such node or output.`,
  },
  status: {
    synopsis: 'status',
    summary: 'per step: cached, to run, failed last time',
    usage: 'pairbench status [options]',
    about: `Per step: nodes, cached, to run, and failed last time; then each failed node with
its last failure.`,
    options: [],
    config: true,
    exits: `0 listed; ${CONFIG_ERROR}.`,
  },
  gc: {
    synopsis: 'gc',
    summary: 'remove least-recently-used store entries down to a size cap',
    usage: 'pairbench gc [options]',
    about: `Removes store entries least recently used first until the store fits the size cap,
never anything the current config reaches, nor what other configs sharing the store
reached in their last run, nor any attempt a registered cohort version executed.
Also removes temp files and locks left by killed runs. It never collects beside a live
run on the store: it waits for the runs under way to end (and runs that start meanwhile
wait for it), and keeps whatever was used or written within the grace period, so a run
killed before it finished finds its work on the next run.`,
    options: [
      ['max-size', 'SIZE', 'the cap, with its unit (e.g. 500MB, 2GiB, 4096B; default: store.max_size, 10GB)'],
      ['dry-run', null, 'only report what would be removed'],
      ['keep-newer-than', 'DURATION', 'the grace period: what was used or written this recently is kept (e.g. 30m, 2h, 0s; default 1h)'],
      ['if-idle', null, 'collect only if nothing is using the store: with a run under way, exit 1 at once, naming it, instead of waiting for it'],
    ],
    config: true,
    exits: `0 collected (or, with --dry-run, listed); 1 a run is under way and --if-idle was given; ${CONFIG_ERROR}.`,
  },
  fsck: {
    synopsis: 'fsck',
    summary: 'check the whole store: every blob re-hashed, every record re-verified',
    usage: 'pairbench fsck [options]',
    about: `Checks the whole store: every blob is re-hashed (a size and mtime prove nothing),
every action record re-verified against its key, and every blob a record needs is
present and intact. Lists what is corrupt or missing. With --repair, drops it: the
nodes that need it are rebuilt by the next 'pairbench run'.`,
    options: [['repair', null, 'drop corrupt blobs and the records that need them']],
    config: true,
    exits: `0 the store is intact; 1 damage was found (dropped with --repair); ${CONFIG_ERROR}.`,
  },
  doctor: {
    synopsis: 'doctor',
    summary: 'preflight: names every missing prerequisite (exit 1), never half-starts',
    usage: 'pairbench doctor [options]',
    about: `Checks every prerequisite of the configured steps and names EVERY missing one with
its fix: git and tar; free disk for the store; free memory after what is already
committed (MemAvailable minus running containers' limits, never MemTotal); and what
each step kind needs (its preflight): each sandbox backend working (bwrap runnable,
dockerd answering) and each pinned image present; the agent CLIs installed at their
pinned versions; the credentials each arm needs (by name; a value is never printed);
task repositories and commits reachable. Then, when all of that passes, the agent
canary: one real turn of each run step's agent CLI in that step's own sandbox and
image, against pairbench's scripted model (no provider is contacted, nothing is
recorded), so an agent that cannot start there (a library or binary missing from the
image, a path not mounted) is named before any attempt. Exit 0 when all pass, 1
otherwise.`,
    options: [['skip-canary', null, 'check the prerequisites only; run no agent']],
    config: true,
    exits: `0 every check passed; 1 some check failed; ${CONFIG_ERROR}.`,
  },
  probe: {
    synopsis: 'probe [NODE]',
    summary: 'one attempt, no verifier: real token counts priced over the whole cohort',
    usage: 'pairbench probe [NODE] [options]',
    about: `Runs ONE attempt (the first of the run step, or NODE) with no verifier and no
certification, reads its real token counts from the gateway, and prints the
projected tokens, weighted cost, cost in USD (with its confidence) and wall time of
the whole cohort (tasks x arms x reps), before you fund it. Nothing is recorded as
an attempt.`,
    options: [],
    operands: { min: 0, max: 1, message: 'probe takes at most one NODE (a run node)' },
    config: true,
    exits: `0 the attempt ran and the cohort is projected; 1 the attempt failed; ${CONFIG_ERROR}, or NODE is not a run node.`,
  },
  freeze: {
    synopsis: 'freeze [COHORT]',
    summary: "record a cohort version's freeze digest (a run does it too)",
    usage: 'pairbench freeze [COHORT...] [options]',
    about: `A cohort is an analyze step. Its freeze is derived from the graph: the key inputs
of every node upstream of it (prompts, repositories and commits, verifier bytes,
treatments and the steps that make them, agent and model, image and resources,
caps, admission policy, every step's config, sample size and attempt order) and its
own analysis, whatever their kind. A version is bound to its freeze at its first
observation (an attempt executed, or an analysis, look, gate or export produced or
reused); after that 'run' refuses any change, naming the step and field, until
"version" is bumped. The record is a hash-chained log in the store; every record an
attempt leaves names the registration it was made under, so a registry that was
moved or cut short is found.`,
    options: [
      [
        'acknowledge-reset',
        null,
        `go on in this store although its records name registrations
its registry lost (moved, cut short, rewritten): the gap is
written into the registry and every later bundle says so`,
      ],
    ],
    operands: ANY,
    config: true,
    exits: `0 frozen (or already frozen with the same fields); ${CONFIG_ERROR}, an unknown cohort, a frozen field changed after the version was bound, or a registry that lost what the store's records name.`,
  },
  history: {
    synopsis: 'history [COHORT]',
    summary: "a cohort's versions: freeze digests, dates, what each observed",
    usage: 'pairbench history [COHORT...] [options]',
    about: `Every registered version of a cohort: its freeze digest, when it was frozen and
bound, how many attempts it executed, and every observation it made (the verdicts,
when, by which node, and which attempts it reused from which version), from the
store's hash-chained registry log (a broken chain is an error).`,
    options: [],
    operands: ANY,
    config: true,
    exits: `0 listed; ${CONFIG_ERROR}, or an unknown cohort.`,
  },
  export: {
    synopsis: 'export --out DIR',
    summary: 'write out the cohort bundle(s) built by export steps',
    usage: 'pairbench export --out DIR [NODE...] [options]',
    about: `Writes the bundle that an export step built (results, receipts, evidence, redacted
logs and trajectories, report.md, report.html, attempts.csv, manifest.json) into
DIR, which must be new or empty: all or nothing, every stored blob verified as it is
copied. With several export nodes, each goes to DIR/<node>. Prints the bundle's root
digest (the SHA-256 of manifest.json): publish it where the bundle cannot reach (a
CI job log), and anyone can check a bundle is that one.`,
    options: [
      ['out', 'DIR', 'where the bundle is written'],
      [
        'public',
        null,
        `the form to publish: the hidden verifier, the reference solution
and every quote of them (any run of 40 bytes) withheld, their
digests in withheld.json (the default for an export step with
public: true)`,
      ],
      ['private', null, 'everything, for the team (the default otherwise)'],
      ['sign', 'KEY', 'sign manifest.json with this Ed25519 private key (PEM):\nwrites manifest.sig.json (openssl genpkey -algorithm ed25519)'],
      [
        'harbor-layout',
        null,
        `write DIR as a Harbor jobs directory that Harbor's viewer
opens (harbor view DIR): DIR/<cohort>/ holds one trial per
attempt (config.json, result.json, agent/trajectory.json,
verifier/test-stdout.txt) and the bundle in
DIR/<cohort>/pairbench/ (what verify-bundle checks)`,
      ],
      [
        'remote-cache',
        'URL',
        'fetch the bundle from this remote cache when the store holds only\nits record (a run that replayed remote hits); cache.remote otherwise',
      ],
      ['progress', 'MODE', 'auto (a bar on a terminal for a bundle over 64 MiB), plain (a line\nat every tenth of the bytes written), none'],
    ],
    operands: ANY,
    config: true,
    exits: `0 the bundle was written; ${CONFIG_ERROR}, no bundle built yet for a node, or DIR is not empty.`,
  },
  'verify-bundle': {
    synopsis: 'verify-bundle DIR',
    summary: 're-check a bundle against its manifest.json',
    usage: 'pairbench verify-bundle DIR [options]',
    about: `Re-hashes every file of a bundle against its manifest.json and names each file that
differs, is missing, or is extra, and prints the root digest (SHA-256 of
manifest.json). A manifest rewritten to match edited files still passes that check:
bind the bundle to the run that made it with --root (the digest the export printed)
or --key (the public key of an export --sign).`,
    options: [
      ['root', 'DIGEST', 'the published root digest (sha256:...) the bundle must have'],
      ['key', 'PUB', 'an Ed25519 public key (PEM): manifest.sig.json must verify'],
      ['progress', 'MODE', 'auto (a bar on a terminal for a bundle over 64 MiB), plain (a line\nat every tenth of the bytes hashed), none'],
      ['json', null, 'machine-readable output'],
      ['help', null, 'this help'],
    ],
    operands: { min: 1, max: 1, message: 'verify-bundle takes exactly one DIR' },
    config: false,
    exits: '0 the bundle matches (and its root / signature check out); 1 it does not;\n2 usage error.',
  },
  generate: {
    synopsis: 'generate KIND',
    summary: "derive tasks from a repo's own test suite (stub_function, revert_reimplement)",
    usage: 'pairbench generate stub_function|revert_reimplement --repo DIR --commit REV --out DIR [options]',
    about: `Derives tasks from a repository's own test suite, deterministically for (commit,
seed), and writes each as a task directory (task.yaml, setup.patch, solution.patch)
a person can read and freeze. stub_function replaces an exported function's body
with a throw (JS/TS) or raise NotImplementedError (Python); revert_reimplement puts
a file recently changed by a small commit back to its parent version. The covering
tests are found by running the suite. Every candidate goes through the
discrimination check (its verifier fails on the starting tree and passes with the
solution) and certify's static scan (nothing of the solution left in the tree);
failures are dropped with a reason. --count is an upper bound: what was found is
written. With --add-to CONFIG the new task ids join the task matrix of every step of
CONFIG that reads its tasks from --out (init's unwritten placeholder task leaves it).`,
    options: [
      ['repo', 'DIR', 'a local git repository (read from git objects, never its working tree)'],
      ['commit', 'REV', 'a commit, branch or tag (HEAD too), frozen to its full id in the tasks'],
      ['out', 'DIR', 'where task directories are written'],
      ['seed', 'N', 'orders the candidates (default 0)'],
      ['count', 'N', 'at most how many tasks (default 5)'],
      ['add-to', 'CONFIG', "add the new task ids to CONFIG's task matrix (edited in place, comments kept)"],
      ['language', 'js|python', '(default js)'],
      [
        'test-command',
        'CMD',
        "runs the suite with per-test results (default: the repository's own:\npackage.json scripts.test when it is tape or node --test; pytest -rA)",
      ],
      ['repeats', 'N', 'discrimination check repeats (default 2)'],
      ['json', null, 'machine-readable output'],
      ['help', null, 'this help'],
    ],
    operands: { min: 1, max: 1, message: 'generate takes exactly one KIND: stub_function or revert_reimplement' },
    config: false,
    exits: '0 tasks written (up to --count); 1 refused (no valid task, or --add-to could not add them; said why); 2 usage error.',
  },
  worker: {
    synopsis: 'worker',
    summary: 'execute nodes a coordinator queues on Redis (run --executor redis://...)',
    usage: 'pairbench worker --redis redis://HOST:PORT/DB [options]',
    about: `Executes the nodes a coordinator ('pairbench run --executor redis://...') queues: for
each job it reads the node's upstream records from the remote cache, checks that it
computes the coordinator's key (the same config and input files: run workers on the
same commit of the project), runs the node in its own store and sandbox, and uploads
the result. A worker that dies holds its job only until its lock expires (10 s;
PAIRBENCH_WORKER_LOCK_MS); then another worker runs it. Stops on SIGINT or SIGTERM.
With --json, one JSON line per finished job.`,
    options: [
      ['redis', 'URL', 'the queue (required)'],
      ['concurrency', 'K', 'jobs at once on this worker, across every kind (default 1)'],
      ['remote-cache', 'URL', 'overrides cache.remote (required one way or the other)'],
    ],
    config: true,
    exits: `0 stopped on request (the jobs it held finished or were handed back); ${CONFIG_ERROR}.`,
  },
  view: {
    synopsis: 'view [BUNDLE_DIR]',
    summary: 'a local, read-only web viewer: verdicts, pairs side by side, trajectories (live during a run)',
    usage: 'pairbench view [BUNDLE_DIR] [options]',
    about: `Serves a web viewer on this machine: each cohort's verdicts (the report's own
sentences and charts, its status bar and methods), its tasks with filters (task,
family, category, arm, outcome, admission), a task's attempts side by side (exit
reason, admission and reason code, tokens, cost, wall time, the diff each made, the
verifier's output, delivery evidence) and each attempt's trajectory and gateway
exchanges (credentials redacted), with leakage and out-of-bounds findings marked.
With BUNDLE_DIR it shows that exported bundle (or each bundle under it: an export
of several nodes, a Harbor layout); otherwise the config's store, read
again every second: started during a 'pairbench run', it shows nodes completing and
each bundle as its export node finishes. Read-only (no write endpoint); every value
is shown as text. Links are stable URLs. Runs until Ctrl-C.`,
    options: [
      ['port', 'N', 'the port (default 7377; 0 picks a free one)'],
      ['host', 'ADDR', 'the address to listen on (default 127.0.0.1; another exposes the\nviewer to that network, and it then answers any Host name)'],
    ],
    operands: { min: 0, max: 1, message: 'view takes at most one BUNDLE_DIR' },
    config: true,
    exits: `0 stopped (Ctrl-C); ${CONFIG_ERROR}, BUNDLE_DIR is not a bundle, or the port is in use.`,
  },
} as const satisfies Record<string, CommandDoc>;

export type CommandName = keyof typeof COMMANDS;

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name);
}

/** The options `command` accepts: its own, and --config, --store, --json and --help. */
export function optionsOf(command: CommandName): OptionName[] {
  const doc: CommandDoc = COMMANDS[command];
  const always: OptionName[] = doc.config ? COMMON.map(([name]) => name) : ['json', 'help'];
  return [...new Set([...always, ...doc.options.map(([name]) => name)])];
}

/** What is wrong with `operands` for `command`, if anything. */
export function operandProblem(command: CommandName, operands: readonly string[]): string | undefined {
  const expected = (COMMANDS[command] as CommandDoc).operands;
  if (!expected) return operands.length ? `"${command}" takes no arguments` : undefined;
  return operands.length < expected.min || operands.length > expected.max ? expected.message : undefined;
}

/** `-j, --jobs N`: how an option is written in help. */
function flagsOf([name, value]: OptionDoc): string {
  const option: { value: boolean; short?: string } = OPTIONS[name];
  return `${option.short ? `-${option.short}, ` : '    '}--${name}${value ? ` ${value}` : ''}`;
}

/** Options as a two-column block: flags, then the help (its later lines under its first; under the flags when they are long). */
function optionBlock(docs: readonly OptionDoc[], width = 24): string {
  const indent = ' '.repeat(width + 2);
  return docs
    .map((d) => {
      const flags = flagsOf(d);
      const lines = d[2].split('\n');
      const head = flags.length + 2 <= width ? [`  ${flags.padEnd(width)}${lines.shift()}`] : [`  ${flags}`];
      return [...head, ...lines.map((l) => indent + l)].join('\n');
    })
    .join('\n');
}

const COMMON_BLOCK = `Options for every command:\n${optionBlock(COMMON)}`;

/** The commands that read no config (they take only --json and --help of the common options). */
const configless = (): string[] => Object.entries(COMMANDS).flatMap(([name, doc]: [string, CommandDoc]) => (doc.config ? [] : [name]));

/** `pairbench COMMAND --help`. */
export function helpFor(command: CommandName): string {
  const doc: CommandDoc = COMMANDS[command];
  const parts = [`Usage: ${doc.usage}`, doc.about];
  if (doc.options.length) parts.push(`Options:\n${optionBlock(doc.options)}`);
  if (doc.config) parts.push(COMMON_BLOCK);
  parts.push(`Exit codes: ${doc.exits}`);
  return parts.join('\n\n');
}

/** `pairbench --help`. */
export function mainHelp(): string {
  const docs: CommandDoc[] = Object.values(COMMANDS);
  const width = Math.max(...docs.map((d) => d.synopsis.length)) + 1;
  return `pairbench: paired, content-addressed evaluation of context for coding agents

Usage: pairbench <command> [options]

Commands:
${docs.map((d) => `  ${d.synopsis.padEnd(width)}${d.summary}`).join('\n')}

Run 'pairbench <command> --help' for a command's options, and its exit codes.

  -V, --version       the version of pairbench

Options for every command but ${configless().join(', ')} (they read no config, and take --json and --help):
${optionBlock(COMMON)}`;
}
