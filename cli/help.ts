export const EXIT = { ok: 0, nodeFailed: 1, usage: 2, interrupted: 130 } as const;

const COMMON = `Options for every command:
  -c, --config FILE   the config (default: bench.config.yaml in the current directory)
      --store DIR     the store directory (default: store.path in the config, or .pairbench)
      --json          machine-readable output on stdout (errors too: {schema_version, ok: false, errors})
  -h, --help          this help`;

/** The options every command takes, then what its exit codes mean. */
const common = (exits: string): string => `${COMMON}\n\nExit codes: ${exits}`;

const CONFIG_ERROR = '2 usage or config error';

export const HELP: Record<string, string> = {
  init: `Usage: pairbench init [DIR] --repo PATH [--commit REV] [options]

Scaffolds a cohort in DIR (default: here): bench.config.yaml (two arms, with and
without the context file under test, every step commented), tasks/first-task/task.yaml
pinned to the full id of REV (default HEAD) of the repository at PATH, and
context/CLAUDE.md. What a person must write (the prompt, the verifier, the context) is
marked in place. Never overwrites a file.

Options:
      --repo PATH          a local git repository: the first task's starting point
      --commit REV         the commit (default HEAD), recorded as its full id
      --test-command CMD   the first task's verifier (default: npm test when package.json
                           has a test script, python -m pytest -q for a Python project)
      --json               machine-readable output

Exit codes: 0 written; 2 usage error, DIR already has a config (or one of the files), or PATH has no such commit.`,
  doctor: `Usage: pairbench doctor [options]

Checks every prerequisite of the configured steps and names EVERY missing one with
its fix: git and tar; free disk for the store; free memory after what is already
committed (MemAvailable minus running containers' limits, never MemTotal); each
sandbox backend working (bwrap runnable, dockerd answering) and each pinned image
present; the agent CLIs installed at their pinned versions; the credentials each
arm needs (by name; a value is never printed); task repositories and commits
reachable. Then, when all of that passes, the agent canary: one real turn of each
run step's agent CLI in that step's own sandbox and image, against pairbench's
scripted model (no provider is contacted, nothing is recorded), so an agent that
cannot start there (a library or binary missing from the image, a path not
mounted) is named before any attempt. Exit 0 when all pass, 1 otherwise.

Options:
  --skip-canary        check the prerequisites only; run no agent

${common(`0 every check passed; 1 some check failed; ${CONFIG_ERROR}.`)}`,
  probe: `Usage: pairbench probe [NODE] [options]

Runs ONE attempt (the first of the run step, or NODE) with no verifier and no
certification, reads its real token counts from the gateway, and prints the
projected tokens, weighted cost, cost in USD (with its confidence) and wall time of
the whole cohort (tasks x arms x reps), before you fund it. Nothing is recorded as
an attempt.

${common(`0 the attempt ran and the cohort is projected; 1 the attempt failed; ${CONFIG_ERROR}, or NODE is not a run node.`)}`,
  freeze: `Usage: pairbench freeze [COHORT...] [options]

A cohort is an analyze step. Its frozen fields (prompts and allowed paths, repo
commits, verifier bytes, treatments, agent, model and version, sandbox image and
resources, caps, sample size and attempt order, validity floor and analysis) hash to
its freeze digest, recorded for its "version". The first executed attempt freezes a
version too. Once a version has executed attempts, 'run' refuses any change to a
frozen field, naming it, until "version" is bumped.

${common(`0 frozen (or already frozen with the same fields); ${CONFIG_ERROR}, an unknown cohort, or a frozen field changed after attempts ran.`)}`,
  history: `Usage: pairbench history [COHORT...] [options]

Every registered version of a cohort: its freeze digest, when it was frozen, its
first attempt, how many attempts it executed and the verdicts it had observed.

${common(`0 listed; ${CONFIG_ERROR}, or an unknown cohort.`)}`,
  export: `Usage: pairbench export --out DIR [NODE...] [options]

Writes the bundle that an export step built (results, receipts, evidence, redacted
logs and trajectories, report.md, report.html, attempts.csv, manifest.json) into
DIR, which must be new or empty: all or nothing, every stored blob verified as it is
copied. With several export nodes, each goes to DIR/<node>. Prints the bundle's root
digest (the SHA-256 of manifest.json): publish it where the bundle cannot reach (a
CI job log), and anyone can check a bundle is that one.

Options:
      --out DIR        where the bundle is written
      --sign KEY       sign manifest.json with this Ed25519 private key (PEM):
                       writes manifest.sig.json (openssl genpkey -algorithm ed25519)
      --harbor-layout  write DIR as a Harbor jobs directory that Harbor's viewer
                       opens (harbor view DIR): DIR/<cohort>/ holds one trial per
                       attempt (config.json, result.json, agent/trajectory.json,
                       verifier/test-stdout.txt) and the bundle in
                       DIR/<cohort>/pairbench/ (what verify-bundle checks)
      --remote-cache URL  fetch the bundle from this remote cache when the store holds only
                       its record (a run that replayed remote hits); cache.remote otherwise
      --progress MODE  auto (a bar on a terminal for a bundle over 64 MiB), plain (a line
                       at every tenth of the bytes written), none

${common(`0 the bundle was written; ${CONFIG_ERROR}, no bundle built yet for a node, or DIR is not empty.`)}`,
  'verify-bundle': `Usage: pairbench verify-bundle DIR [options]

Re-hashes every file of a bundle against its manifest.json and names each file that
differs, is missing, or is extra, and prints the root digest (SHA-256 of
manifest.json). A manifest rewritten to match edited files still passes that check:
bind the bundle to the run that made it with --root (the digest the export printed)
or --key (the public key of an export --sign).

Options:
      --root DIGEST    the published root digest (sha256:...) the bundle must have
      --key PUB        an Ed25519 public key (PEM): manifest.sig.json must verify
      --progress MODE  auto (a bar on a terminal for a bundle over 64 MiB), plain (a line
                       at every tenth of the bytes hashed), none
      --json           machine-readable output

Exit codes: 0 the bundle matches (and its root / signature check out); 1 it does not;
2 usage error.`,
  generate: `Usage: pairbench generate stub_function|revert_reimplement --repo DIR --commit SHA --out DIR [options]

Derives tasks from a repository's own test suite, deterministically for (commit,
seed), and writes each as a task directory (task.yaml, setup.patch, solution.patch)
a person can read and freeze. stub_function replaces an exported function's body
with a throw (JS/TS) or raise NotImplementedError (Python); revert_reimplement puts
a file recently changed by a small commit back to its parent version. The covering
tests are found by running the suite. Every candidate goes through the
discrimination check (its verifier fails on the starting tree and passes with the
solution); failures are dropped with a reason. Fewer valid tasks than --count is a
refusal (exit 1) that names the counts.

Options:
      --repo DIR            a local git repository (read from git objects, never its working tree)
      --commit SHA          the full 40-hex commit
      --out DIR             where task directories are written
      --seed N              orders the candidates (default 0)
      --count N             how many tasks (default 5)
      --language js|python  (default js)
      --test-command CMD    runs the suite with per-test results (default: the repository's own:
                            package.json scripts.test when it is tape or node --test; pytest -rA)
      --repeats N           discrimination check repeats (default 2)
      --json                machine-readable output

Exit codes: 0 tasks written; 1 refused (fewer valid tasks than --count, said why); 2 usage error.`,
  main: `pairbench: paired, content-addressed evaluation of context for coding agents

Usage: pairbench <command> [options]

Commands:
  init [DIR]         scaffold a commented cohort and a first task (--repo PATH [--commit REV])
  run [NODE...]      build every stale node (or only NODE... and what they need)
  plan [NODE...]     dry run: each node as cached or to run, and why
  explain NODE       a node's key inputs, its record, and what changed since its last build
  show NODE [OUTPUT] print a node's stored output, a file inside it, or its log (--list)
  status             per step: cached, to run, failed last time
  gc                 remove least-recently-used store entries down to a size cap
  fsck               check the whole store: every blob re-hashed, every record re-verified
  doctor             preflight: names every missing prerequisite (exit 1), never half-starts
  probe [NODE]       one attempt, no verifier: real token counts priced over the whole cohort
  freeze [COHORT]    record a cohort version's freeze digest (the first attempt does it too)
  history [COHORT]   a cohort's versions: freeze digests, dates, what each observed
  export --out DIR   write out the cohort bundle(s) built by export steps
  verify-bundle DIR  re-check a bundle against its manifest.json
  generate KIND      derive tasks from a repo's own test suite (stub_function, revert_reimplement)
  worker             execute nodes a coordinator queues on Redis (run --executor redis://...)

Run 'pairbench <command> --help' for a command's options, and its exit codes.

  -V, --version       the version of pairbench

${COMMON}`,
  run: `Usage: pairbench run [NODE...] [options]

Builds every node whose key has no record in the store. Cached nodes are reused;
a failing node fails only the nodes downstream of it. NODE is a node id
(run/t1/treatment/2), a prefix of one (run/t1) or a step name; its upstream nodes
are built too.

Options:
  -j, --jobs N        how many nodes execute at once (default: concurrency.global, 4)
  -v, --verbose       also list cached nodes
      --progress MODE auto (listr2 on a TTY, plain lines otherwise or when CI is set), plain, or none
      --shard i/N     build only this shard's nodes: those of the tasks that hash to shard i of N
                      (a task's chain stays in one shard); shared roots (a context step) run in any
                      shard that finds them uncached; nodes that gather tasks (analyze, export) are
                      left to a final run without --shard. Skipped nodes do not fail a shard (exit 0).
      --remote-cache URL   the remote cache tier (overrides cache.remote): read on a local miss,
                      written after a node succeeds (see README "Remote cache")
      --cache-mode MODE    read-write or read-only (a pull-request job: it never writes)
      --executor redis://HOST:PORT/DB
                      hand every node that must run to 'pairbench worker' processes through
                      BullMQ queues on this Redis (one queue per step kind; job id = the node's
                      key; concurrency.kinds limits hold across the fleet); needs the remote cache

${common(`0 every node built or cached (or left to another shard); 1 some node failed or was skipped; ${CONFIG_ERROR}, or a cohort's frozen field changed; 130 interrupted.`)}`,
  worker: `Usage: pairbench worker --redis redis://HOST:PORT/DB [options]

Executes the nodes a coordinator ('pairbench run --executor redis://...') queues: for
each job it reads the node's upstream records from the remote cache, checks that it
computes the coordinator's key (the same config and input files: run workers on the
same commit of the project), runs the node in its own store and sandbox, and uploads
the result. A worker that dies holds its job only until its lock expires (10 s;
PAIRBENCH_WORKER_LOCK_MS); then another worker runs it. Stops on SIGINT or SIGTERM.

Options:
      --redis URL         the queue (required)
      --concurrency K     jobs at once on this worker, across every kind (default 1)
      --remote-cache URL  overrides cache.remote (required one way or the other)
      --json              one JSON line per finished job

Exit codes: 0 stopped on request, 2 a config or usage error.

${common(`0 stopped on request (the jobs it held finished or were handed back); ${CONFIG_ERROR}.`)}`,
  plan: `Usage: pairbench plan [NODE...] [options]

Lists every node as cached or to run, and for each node to run WHY: which input
changed (from its key pre-image against the node's last build), that it is new,
that its stored output is corrupt, or which upstream runs first. Changes nothing.

Options:
  -a, --all           also list cached nodes (human output)

${common(`0 planned; ${CONFIG_ERROR}, or no node matches NODE.`)}`,
  explain: `Usage: pairbench explain NODE [options]

Shows a node's key and the inputs it hashes (config slice, matrix values, file
digests, upstream output digests), its record when cached (outputs, log, time),
its last failure, and what changed since its last build.

${common(`0 explained; ${CONFIG_ERROR}, or no node matches NODE.`)}`,
  show: `Usage: pairbench show NODE [OUTPUT] [options]

Prints a node's stored output from the store: an output file (result.json,
verdict.json, ...), a path inside a directory output (tree/src/add.mjs), or its
log ("log"; for a failed node, the log of its last failure). Without OUTPUT, or
with a directory, lists the outputs (name, type, size, digest). The record shown
is the one this config plans for the node; a stale node shows what this config's
last run built (said on stderr). Exit 1 when the node has not been built.

Options:
  -l, --list           list instead of printing (an output file's entry)

${common(`0 shown; 1 the node has not been built; ${CONFIG_ERROR}, or no such node or output.`)}`,
  status: `Usage: pairbench status [options]

Per step: nodes, cached, to run, and failed last time; then each failed node with
its last failure.

${common(`0 listed; ${CONFIG_ERROR}.`)}`,
  fsck: `Usage: pairbench fsck [options]

Checks the whole store: every blob is re-hashed (a size and mtime prove nothing),
every action record re-verified against its key, and every blob a record needs is
present and intact. Lists what is corrupt or missing. With --repair, drops it: the
nodes that need it are rebuilt by the next 'pairbench run'.

Options:
      --repair         drop corrupt blobs and the records that need them

${common(`0 the store is intact; 1 damage was found (dropped with --repair); ${CONFIG_ERROR}.`)}`,
  gc: `Usage: pairbench gc [options]

Removes store entries least recently used first until the store fits the size cap,
never anything the current config reaches, nor what other configs sharing the store
reached in their last run, nor any attempt a registered cohort version executed.
Also removes temp files and locks left by killed runs.

Options:
      --max-size SIZE  the cap, with its unit (e.g. 500MB, 2GiB, 4096B; default: store.max_size, 10GB)
  -n, --dry-run        only report what would be removed

${common(`0 collected (or, with --dry-run, listed); ${CONFIG_ERROR}.`)}`,
};
