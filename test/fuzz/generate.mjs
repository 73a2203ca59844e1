// Generates the malformed-config fuzz set in test/fuzz/configs/ (committed; re-run this
// script after changing it: `node test/fuzz/generate.mjs`). Each case is a variation of
// one valid config (BASE) that must be refused with exit 2, a file:line:column and the
// field, never a stack trace, never a hang. The first comment line of each file says
// what is wrong with it; `# expect:` lines are substrings the error must contain.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'configs');

const BASE = `store: { path: .pairbench-fuzz, max_size: 1GB }
concurrency: { global: 2, kinds: { run: 1 } }
steps:
  materialize:
    kind: materialize
    tasks: ../tasks
    matrix: { task: [t1] }
  certify:
    kind: certify
    needs: [materialize]
    tasks: ../tasks
    matrix: { task: [t1] }
    sandbox: { backend: local, egress: open }
    policy: { repeats: 1 }
  attempts:
    kind: run
    needs: [materialize, certify]
    tasks: ../tasks
    matrix: { task: [t1], arm: [control, treatment], rep: 2 }
    agent: { adapter: command, command: "true" }
    arms:
      control: {}
      treatment: { env: { MODE: on } }
    limits: { turns: 5, wall_seconds: 60, tokens: 1000, cost_usd: 1 }
    sandbox: { backend: local, egress: open }
  verify:
    kind: verify
    needs: [materialize, attempts]
    tasks: ../tasks
    matrix: { task: [t1], arm: [control, treatment], rep: 2 }
    sandbox: { backend: local, egress: open }
  audit:
    kind: audit
    needs: [attempts, verify]
    tasks: ../tasks
    matrix: { task: [t1], arm: [control, treatment], rep: 2 }
  cohort:
    kind: analyze
    version: 1
    needs: [audit]
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 1000, seed: 1 }
  export:
    kind: export
    needs: [materialize, certify, attempts, verify, audit, cohort]
  note:
    kind: command
    cmd: echo hi > note.txt
    outs: [note.txt]
`;

/** [name, what is wrong, config text, expected substrings]. */
const cases = [];
const add = (name, why, text, ...expect) => cases.push({ name, why, text, expect });
/** BASE with the first occurrence of `from` replaced by `to` (which must be there). */
const edit = (from, to) => {
  if (!BASE.includes(from)) throw new Error(`BASE has no ${JSON.stringify(from)}`);
  return BASE.replace(from, to);
};

// --- YAML syntax and tags
add('yaml-undefined-alias', 'an alias to an anchor that does not exist', edit('matrix: { task: [t1] }\n  certify', 'matrix: *nowhere\n  certify'), 'nowhere');
add('yaml-tab-indent', 'a tab in the indentation', edit('    kind: materialize', '\tkind: materialize'));
add('yaml-unterminated-quote', 'a quoted string that never ends', edit('cmd: echo hi > note.txt', 'cmd: "echo hi > note.txt'));
add('yaml-duplicate-key', 'the same key twice in one mapping', edit('    kind: materialize', '    kind: materialize\n    kind: materialize'));
add('yaml-shell-tag', 'an unknown tag !shell', edit('cmd: echo hi > note.txt', 'cmd: !shell echo hi > note.txt'), '!shell');
add('yaml-js-function-tag', 'the !!js/function tag', edit('cmd: echo hi > note.txt', 'cmd: !!js/function "function () { return 1 }"'), '!!js/function');
add('yaml-python-tag', 'the !!python/object tag', edit('    kind: materialize', '    kind: !!python/object:os.system materialize'), '!!python');
add('yaml-custom-tag-on-map', 'an unknown tag on a mapping', edit('arms:\n      control: {}', 'arms: !include\n      control: {}'), '!include');
add('yaml-bad-indent', 'a key indented deeper than its siblings', edit('    needs: [materialize]\n    tasks', '    needs: [materialize]\n       tasks'));
add('yaml-unclosed-flow', 'a flow mapping that never closes', edit('matrix: { task: [t1] }\n  certify', 'matrix: { task: [t1]\n  certify'));
add('yaml-two-documents', 'two YAML documents in one file', BASE + '---\nsteps: {}\n');
add('yaml-not-a-mapping', 'the top level is a list', '- steps\n- store\n');
add('yaml-scalar-top', 'the top level is a string', 'just a string\n');
add('yaml-empty', 'an empty file', '');
add('yaml-merge-key-to-scalar', 'a merge key pointing at a scalar', edit('  note:\n    kind: command', '  note:\n    <<: *x\n    kind: command').replace('store: {', 'x: &x 1\nstore: {'));
add('yaml-control-char', 'a control character in a string', edit('cmd: echo hi > note.txt', 'cmd: "echo \\u0000 hi"'));

// --- top level and store
add('top-unknown-key', 'an unknown top-level key', 'stepz: {}\n' + BASE, 'stepz');
add('top-steps-list', 'steps is a list', edit('steps:\n  materialize:', 'steps:\n  - materialize:'));
add('top-no-steps', 'no steps at all', 'store: { path: x }\n', 'steps');
add('store-bare-size', 'a size without its unit', edit('max_size: 1GB', 'max_size: 1000'), 'max_size');
add('store-bad-size-unit', 'an unknown size unit', edit('max_size: 1GB', 'max_size: 1PB'), 'max_size');
add('store-path-number', 'store.path is a number', edit('path: .pairbench-fuzz', 'path: 7'), 'store.path');
add('concurrency-zero', 'global concurrency 0', edit('global: 2', 'global: 0'), 'concurrency.global');
add('concurrency-huge', 'global concurrency past what a machine can run', edit('global: 2', 'global: 100000000'), 'concurrency.global');
add('concurrency-kind-negative', 'a negative per-kind limit', edit('kinds: { run: 1 }', 'kinds: { run: -1 }'), 'concurrency.kinds.run');
add('include-missing', 'an include that matches nothing', 'include: [nowhere/*.yaml]\n' + BASE, 'include');
add('include-not-list', 'include is a string', 'include: 7\n' + BASE, 'include');

// --- steps, kinds, needs
add('step-no-kind', 'a step without kind', edit('  note:\n    kind: command\n', '  note:\n'), 'kind');
add('step-unknown-kind', 'an unknown kind', edit('    kind: command', '    kind: comand'), 'comand');
add('step-bad-name', 'a step name with a space', edit('  note:', '  "my note":'), 'my note');
add('needs-unknown', 'needs a step that does not exist', edit('needs: [audit]', 'needs: [audti]'), 'audti');
add('needs-self', 'a step that needs itself', edit('needs: [audit]', 'needs: [cohort]'), 'cohort');
add('needs-cycle', 'two steps that need each other', edit('    needs: [materialize]\n    tasks: ../tasks\n    matrix: { task: [t1] }\n    sandbox', '    needs: [materialize, attempts]\n    tasks: ../tasks\n    matrix: { task: [t1] }\n    sandbox'), 'cycle');
add('needs-duplicate', 'the same need twice', edit('needs: [audit]', 'needs: [audit, audit]'), 'needs');
add('needs-string', 'needs is a string', edit('needs: [audit]', 'needs: audit'), 'needs');
add('unknown-step-key', 'a misspelled step key', edit('    cmd: echo hi > note.txt', '    cdm: echo hi > note.txt'), 'cdm');
add('description-number', 'a description that is a number', edit('    kind: command', '    kind: command\n    description: 7'), 'description');

// --- matrix: sizes, shapes, values
add('matrix-rep-million', 'a million repetitions: far past the node limit', edit('rep: 2 }\n    agent', 'rep: 1000000 }\n    agent').replaceAll('rep: 2 }', 'rep: 1000000 }'), 'nodes');
add('matrix-cube', 'a 1e6 x 1e6 x 1e6 matrix', edit('    cmd: echo hi > note.txt', '    matrix: { a: 1000000, b: 1000000, c: 1000000 }\n    cmd: echo hi > note.txt'), 'nodes');
add('matrix-just-over-limit', 'one node more than a config may have', edit('    cmd: echo hi > note.txt', '    matrix: { a: 1000, b: 251 }\n    cmd: echo hi > note.txt'), 'nodes');
add('matrix-zero', 'a dimension of count 0', edit('    cmd: echo hi > note.txt', '    matrix: { a: 0 }\n    cmd: echo hi > note.txt'), 'matrix');
add('matrix-negative', 'a negative count', edit('rep: 2 }\n    agent', 'rep: -2 }\n    agent'), 'rep');
add('matrix-float', 'a fractional count', edit('rep: 2 }\n    agent', 'rep: 2.5 }\n    agent'), 'rep');
add('matrix-empty-list', 'an empty list of values', edit('matrix: { task: [t1] }\n  certify', 'matrix: { task: [] }\n  certify'), 'task');
add('matrix-duplicate-values', 'the same value twice', edit('matrix: { task: [t1] }\n  certify', 'matrix: { task: [t1, t1] }\n  certify'), 'task');
add('matrix-bad-value', 'a value with a slash', edit('arm: [control, treatment], rep: 2 }\n    agent', 'arm: [control, "treat/ment"], rep: 2 }\n    agent'), 'arm');
add('matrix-bad-dim-name', 'an upper-case dimension name', edit('    cmd: echo hi > note.txt', '    matrix: { Arm: [a] }\n    cmd: echo hi > note.txt'), 'Arm');
add('matrix-object-value', 'a value that is a mapping', edit('matrix: { task: [t1] }\n  certify', 'matrix: { task: [{ id: t1 }] }\n  certify'), 'task');
add('matrix-string', 'matrix is a string', edit('    cmd: echo hi > note.txt', '    matrix: everything\n    cmd: echo hi > note.txt'), 'matrix');
add('matrix-mismatch', 'a node whose upstream has no node with its values', edit('matrix: { task: [t1], arm: [control, treatment], rep: 2 }\n    sandbox: { backend: local, egress: open }\n  audit', 'matrix: { task: [t1], arm: [control, treatment], rep: 3 }\n    sandbox: { backend: local, egress: open }\n  audit'), 'rep=3');
add('many-missing-tasks', '200,000 tasks none of which exists', edit('matrix: { task: [t1] }\n  certify', `matrix: { task: [${Array.from({ length: 200_000 }, (_, i) => `m${i}`).join(', ')}] }\n  certify`), 'task');

// --- command step
add('cmd-number', 'cmd is a number', edit('cmd: echo hi > note.txt', 'cmd: 7'), 'cmd');
add('cmd-missing', 'a command step without cmd', edit('    cmd: echo hi > note.txt\n', ''), 'cmd');
add('outs-string', 'outs is a string', edit('outs: [note.txt]', 'outs: note.txt'), 'outs');
add('outs-absolute', 'an absolute output path', edit('outs: [note.txt]', 'outs: [/etc/passwd]'), 'outs');
add('outs-parent', 'an output outside the work directory', edit('outs: [note.txt]', 'outs: [../note.txt]'), 'outs');
add('timeout-negative', 'a negative timeout', edit('    outs: [note.txt]', '    outs: [note.txt]\n    timeout: -5'), 'timeout');
add('timeout-too-long', 'a timeout past the longest timer', edit('    outs: [note.txt]', '    outs: [note.txt]\n    timeout: 99999999999'), 'timeout');
add('env-number', 'an env value that is a mapping', edit('    outs: [note.txt]', '    outs: [note.txt]\n    env: { A: { b: 1 } }'), 'env');
add('env-bad-name', 'an env name with =', edit('    outs: [note.txt]', '    outs: [note.txt]\n    env: { "A=B": x }'), 'env');
add('pass-env-bad', 'pass_env with a space', edit('    outs: [note.txt]', '    outs: [note.txt]\n    pass_env: ["MY VAR"]'), 'pass_env');
add('deps-missing-file', 'a dependency that does not exist', edit('    outs: [note.txt]', '    outs: [note.txt]\n    deps: [nothing-here.txt]'), 'nothing-here.txt');
add('deps-from-unknown', 'a dependency from a step not needed', edit('    outs: [note.txt]', '    outs: [note.txt]\n    deps: [{ from: cohort, out: analysis.json }]'), 'cohort');

// --- run step
add('run-no-agent', 'a run step without agent', edit('    agent: { adapter: command, command: "true" }\n', ''), 'agent');
add('run-unknown-adapter', 'an unknown adapter', edit('adapter: command, command: "true"', 'adapter: claude'), 'claude');
add('run-arm-missing', 'a matrix arm with no entry under arms', edit('      treatment: { env: { MODE: on } }\n', ''), 'treatment');
add('run-env-reserved', 'an arm env that redirects the model', edit('treatment: { env: { MODE: on } }', 'treatment: { env: { ANTHROPIC_BASE_URL: "http://evil" } }'), 'ANTHROPIC_BASE_URL');
add('run-turns-zero', 'a turn cap of 0', edit('turns: 5', 'turns: 0'), 'turns');
add('run-wall-too-long', 'wall_seconds past the longest timer (every attempt would end at once)', edit('wall_seconds: 60', 'wall_seconds: 3000000'), 'wall_seconds');
add('run-wall-negative', 'a negative wall time', edit('wall_seconds: 60', 'wall_seconds: -1'), 'wall_seconds');
add('run-tokens-float', 'a fractional token cap', edit('tokens: 1000', 'tokens: 10.5'), 'tokens');
add('run-tokens-huge', 'a token cap past 1e12', edit('tokens: 1000', 'tokens: 1e15'), 'tokens');
add('run-cost-zero', 'a cost cap of 0', edit('cost_usd: 1', 'cost_usd: 0'), 'cost_usd');
add('run-limits-unknown', 'an unknown limit', edit('cost_usd: 1 }', 'cost_usd: 1, steps: 3 }'), 'steps');
add('run-sandbox-backend', 'an unknown sandbox backend', edit('    sandbox: { backend: local, egress: open }\n  verify', '    sandbox: { backend: podman, egress: open }\n  verify'), 'podman');
add('run-sandbox-egress', 'an unknown egress mode', edit('    sandbox: { backend: local, egress: open }\n  verify', '    sandbox: { backend: local, egress: partial }\n  verify'), 'partial');
add('run-docker-unpinned', 'a docker image by tag, not pinned', edit('    sandbox: { backend: local, egress: open }\n  verify', '    sandbox: { backend: docker, egress: none, image: "ubuntu:latest" }\n  verify'), 'image');
add('run-resources-negative', 'negative cpus', edit('    sandbox: { backend: local, egress: open }\n  verify', '    sandbox: { backend: local, egress: open, resources: { cpus: -1 } }\n  verify'), 'cpus');
add('run-order-seed-string', 'order_seed is a string', edit('    limits: { turns', '    order_seed: abc\n    limits: { turns'), 'order_seed');
add('run-ablate-unknown', 'an ablation of an arm that does not exist', edit('treatment: { env: { MODE: on } }', 'treatment: { ablate: { from: nope, drop_lines: ["x"] } }'), 'nope');
add('run-ablate-bad-regex', 'a drop_lines pattern that is not a regular expression', edit('treatment: { env: { MODE: on } }', 'treatment: { ablate: { from: control, drop_lines: ["(unclosed"] } }'), 'drop_lines');
add('run-files-missing', 'a treatment file that does not exist', edit('treatment: { env: { MODE: on } }', 'treatment: { files: { CLAUDE.md: no-such-context.md } }'), 'no-such-context.md');
add('run-model-both', 'a claude-code agent with no model', edit('adapter: command, command: "true"', 'adapter: claude-code'), 'model');
add('run-api-key-env-bad', 'api_key_env that is not a variable name', edit('    limits: { turns', '    model: { upstream: "https://x", api_key_env: "MY KEY" }\n    limits: { turns'), 'api_key_env');
add('run-no-rep', 'a run step without matrix.rep', edit('matrix: { task: [t1], arm: [control, treatment], rep: 2 }\n    agent', 'matrix: { task: [t1], arm: [control, treatment] }\n    agent'), 'rep');
add('run-no-arm-dim', 'a run step without matrix.arm', edit('matrix: { task: [t1], arm: [control, treatment], rep: 2 }\n    agent', 'matrix: { task: [t1], rep: 2 }\n    agent'), 'arm');

// --- tasks
add('tasks-dir-missing', 'a task directory that does not exist', edit('    tasks: ../tasks\n    matrix: { task: [t1] }\n  certify', '    tasks: ../no-tasks-here\n    matrix: { task: [t1] }\n  certify'), 'no-tasks-here');
add('task-missing', 'a task that does not exist', edit('matrix: { task: [t1] }\n  certify', 'matrix: { task: [t9] }\n  certify'), 't9');
add('task-broken-yaml', 'a task whose task.yaml is not valid', edit('matrix: { task: [t1] }\n  certify', 'matrix: { task: [broken] }\n  certify'), 'broken');
add('task-short-commit', 'a task whose commit is not a full 40-hex id', edit('matrix: { task: [t1] }\n  certify', 'matrix: { task: [short-commit] }\n  certify'), 'commit');
add('tasks-number', 'tasks is a number', edit('    tasks: ../tasks\n    matrix: { task: [t1] }\n  certify', '    tasks: 42\n    matrix: { task: [t1] }\n  certify'), 'tasks');
add('tasks-swebench-missing', 'a SWE-bench file that does not exist', edit('    tasks: ../tasks\n    matrix: { task: [t1] }\n  certify', '    tasks: { swebench: nowhere.jsonl, repos: {}, test_command: "pytest {test}" }\n    matrix: { task: [t1] }\n  certify'), 'nowhere.jsonl');

// --- certify, verify, audit
add('certify-repeats-zero', 'a discrimination check repeated 0 times', edit('policy: { repeats: 1 }', 'policy: { repeats: 0 }'), 'repeats');
add('certify-repeats-huge', 'a million repeats', edit('policy: { repeats: 1 }', 'policy: { repeats: 1000000 }'), 'repeats');
add('certify-fail-on-unknown', 'an unknown finding class', edit('policy: { repeats: 1 }', 'policy: { repeats: 1, fail_on: [everything] }'), 'everything');
add('audit-policy-unknown', 'an unknown consequence', edit('    matrix: { task: [t1], arm: [control, treatment], rep: 2 }\n  cohort', '    matrix: { task: [t1], arm: [control, treatment], rep: 2 }\n    policy: { out_of_bounds: shrug }\n  cohort'), 'shrug');
add('verify-sandbox-string', 'sandbox is a string', edit('    sandbox: { backend: local, egress: open }\n  audit', '    sandbox: local\n  audit'), 'sandbox');

// --- analyze
add('analyze-control-not-arm', 'a control that is not an arm', edit('control: control', 'control: placebo'), 'placebo');
add('analyze-treatment-not-arm', 'a treatment that is not an arm', edit('treatments: [treatment]', 'treatments: [treatmnet]'), 'treatmnet');
add('analyze-treatment-is-control', 'the control compared with itself', edit('treatments: [treatment]', 'treatments: [control]'), 'control');
add('analyze-resamples-huge', 'a trillion bootstrap resamples', edit('resamples: 1000', 'resamples: 1000000000000'), 'resamples');
add('analyze-resamples-few', 'ten resamples', edit('resamples: 1000', 'resamples: 10'), 'resamples');
add('analyze-seed-float', 'a fractional seed', edit('seed: 1 }', 'seed: 1.5 }'), 'seed');
add('analyze-confidence-one', 'confidence 1', edit('    control: control', '    confidence: 1\n    control: control'), 'confidence');
add('analyze-floor-above-one', 'a validity floor of 150%', edit('    control: control', '    validity_floor: 1.5\n    control: control'), 'validity_floor');
add('analyze-version-zero', 'version 0', edit('    version: 1', '    version: 0'), 'version');
add('analyze-version-string', 'version "one"', edit('    version: 1', '    version: one'), 'version');
add('analyze-weights-partial', 'weights without output', edit('    control: control', '    weights: { input: 1, cache_write: 1, cache_read: 1 }\n    control: control'), 'weights');
add('analyze-factorial-levels', 'a factorial level that is not 0 or 1', edit('    control: control', '    factorial: { factors: [a], levels: { control: { a: 2 } } }\n    control: control'), 'levels');
add('analyze-no-control', 'an analyze step without control', edit('    control: control\n', ''), 'control');
add('analyze-overhead-unknown-step', 'overhead from a step that does not exist', edit('    control: control', '    overhead: { step: nope, out: cost.json }\n    control: control'), 'nope');

// --- export
add('export-unknown-key', 'an unknown export key', edit('    needs: [materialize, certify, attempts, verify, audit, cohort]', '    needs: [materialize, certify, attempts, verify, audit, cohort]\n    format: pdf'), 'format');
add('export-no-analyze', 'an export that needs no analyze step', edit('    needs: [materialize, certify, attempts, verify, audit, cohort]', '    needs: [materialize, certify, attempts, verify, audit]'), 'analyze');

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const seen = new Set();
cases.forEach((c, i) => {
  if (seen.has(c.name)) throw new Error(`duplicate case ${c.name}`);
  seen.add(c.name);
  const header = [`# ${c.why}`, ...c.expect.map((e) => `# expect: ${e}`)].join('\n');
  writeFileSync(join(out, `${String(i + 1).padStart(3, '0')}-${c.name}.yaml`), c.text.length > 100_000 ? `${header}\n${c.text}` : `${header}\n${c.text}`);
});
// The config every case varies: it must load, so each refusal is the mutation's doing.
writeFileSync(join(here, 'base.yaml'), `# The valid config every malformed case varies (written by generate.mjs).\n${BASE.replaceAll('../tasks', 'tasks')}`);
console.log(`wrote ${cases.length} malformed configs to ${out}`);
