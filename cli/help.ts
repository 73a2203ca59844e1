export const EXIT = { ok: 0, nodeFailed: 1, usage: 2, interrupted: 130 } as const;

const COMMON = `Options for every command:
  -c, --config FILE   the config (default: bench.config.yaml in the current directory)
      --store DIR     the store directory (default: store.path in the config, or .pairbench)
      --json          machine-readable output on stdout
  -h, --help          this help

Exit codes: 0 all good; 1 some node failed; 2 usage or config error; 130 interrupted.`;

export const HELP: Record<string, string> = {
  main: `pairbench: paired, content-addressed evaluation of context for coding agents

Usage: pairbench <command> [options]

Commands:
  run [NODE...]      build every stale node (or only NODE... and what they need)
  plan [NODE...]     dry run: each node as cached or to run, and why
  explain NODE       a node's key inputs, its record, and what changed since its last build
  status             per step: cached, to run, failed last time
  gc                 remove least-recently-used store entries down to a size cap

Run 'pairbench <command> --help' for a command's options.

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

${COMMON}`,
  plan: `Usage: pairbench plan [NODE...] [options]

Lists every node as cached or to run, and for each node to run WHY: which input
changed (from its key pre-image against the node's last build), that it is new,
that its stored output is corrupt, or which upstream runs first. Changes nothing.

Options:
  -a, --all           also list cached nodes (human output)

${COMMON}`,
  explain: `Usage: pairbench explain NODE [options]

Shows a node's key and the inputs it hashes (config slice, matrix values, file
digests, upstream output digests), its record when cached (outputs, log, time),
its last failure, and what changed since its last build.

${COMMON}`,
  status: `Usage: pairbench status [options]

Per step: nodes, cached, to run, and failed last time; then each failed node with
its last failure.

${COMMON}`,
  gc: `Usage: pairbench gc [options]

Removes store entries least recently used first until the store fits the size cap,
never anything the current config reaches. Also removes temp files and locks left
by killed runs.

Options:
      --max-size SIZE  the cap (e.g. 500MB, 2GiB; default: store.max_size, 10GB)
  -n, --dry-run        only report what would be removed

${COMMON}`,
};
