#!/usr/bin/env node
// `npm run mutate`: each listed property's one-line mutation must make the test that names the
// property fail. For each: the test passes on the code as it is, the line is changed, the test
// must fail, the line is restored (also on Ctrl-C). A mutation that survives means the test
// cannot fail on what it names: exit 1, naming it.
//
// The tests listed call the mutated module in-process (vitest compiles the source), so no build
// is needed; a mutation whose test reaches the code only through the CLI's bundle says `build`.
//
//   npm run mutate                 every mutation
//   npm run mutate -- stat-cache   those whose name contains the word
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');

/** @type {{ name: string; file: string; from: string; to: string; test: string; title: string; build?: boolean }[]} */
const MUTATIONS = [
  {
    name: 'cas-read-digest-check',
    file: 'pipeline/store/cas.ts',
    from: "    if (sha256(bytes) !== digest) throw new CorruptBlobError(digest, 'content does not match its digest');\n",
    to: '',
    test: 'test/store.test.ts',
    title: 'a flipped byte in a stored blob is detected',
  },
  {
    name: 'stat-cache-ctime-and-inode',
    file: 'pipeline/store/stat-cache.ts',
    from: '${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}:${st.dev}',
    to: '${st.size}:${st.mtimeNs}:${st.dev}',
    test: 'test/stat-cache.test.ts',
    title: 'a file rewritten with the same size and mtime is read again',
  },
  {
    name: 'redactor-substring-replacement',
    file: 'gateway/redact.ts',
    from: '    for (const secret of this.secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);\n',
    to: '',
    test: 'test/gateway.test.ts',
    title: "the agent's credential, repeated in its message",
  },
  {
    name: 'host-key-scrub-substring-replacement',
    file: 'gateway/redact.ts',
    from: '    for (const form of [...this.secrets, ...this.encodedForms]) if (out.includes(form)) out = out.split(form).join(REDACTED);\n',
    to: '',
    test: 'test/gateway-hostile.test.ts',
    title: 'an upstream echoing it inside a message',
  },
  {
    name: 'plain-reporter-colour-forced-on',
    file: 'pipeline/reporters/plain.ts',
    from: "    this.color = options.color ?? (Boolean(out.isTTY) && !process.env['NO_COLOR']);\n",
    to: '    this.color = true;\n',
    test: 'test/reporters.test.ts',
    title: 'uses no colour when asked',
  },
  {
    name: 'agent-version-cache-without-ctime',
    file: 'agents/binary-version.ts',
    from: '[bin, st.size, st.mtimeNs, st.ctimeNs, st.ino, st.dev]',
    to: '[bin, st.size, st.mtimeNs, st.ino, st.dev]',
    test: 'test/binary-version.test.ts',
    title: 'asks once per binary',
  },
];

const wanted = process.argv.slice(2);
const chosen = MUTATIONS.filter((m) => wanted.length === 0 || wanted.some((w) => m.name.includes(w)));
if (chosen.length === 0) {
  console.error(`mutate: no mutation is named like ${wanted.join(', ')}; known: ${MUTATIONS.map((m) => m.name).join(', ')}`);
  process.exit(2);
}

/** The one file changed at a time, and its original bytes: put back whatever ends the run. */
let restore;
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    restore?.();
    process.exit(130);
  });

/** Whether the test named passes (vitest's exit code), and the tail of what it printed. */
function runTest(m) {
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', m.test, '-t', m.title, '--reporter=dot'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, FORCE_COLOR: '0' },
  });
  const ran = /Tests\s+.*\((\d+)\)/.exec(r.stdout)?.[0] ?? '';
  return { passed: r.status === 0, ran, tail: `${r.stdout}${r.stderr}`.trim().split('\n').slice(-12).join('\n') };
}

const build = () => execFileSync(process.execPath, [join(ROOT, 'scripts', 'prepare.mjs')], { cwd: ROOT, stdio: 'inherit' });

const survived = [];
for (const m of chosen) {
  const path = join(ROOT, m.file);
  const original = readFileSync(path, 'utf8');
  const count = original.split(m.from).length - 1;
  if (count !== 1) {
    console.error(`mutate: ${m.name}: ${m.file} holds the line to mutate ${count} times (need exactly once): update MUTATIONS in scripts/mutate.mjs`);
    process.exit(2);
  }
  const before = runTest(m);
  if (!before.passed || !/\d+ passed/.test(before.ran)) {
    console.error(`mutate: ${m.name}: ${m.test} "${m.title}" does not pass on the code as it is:\n${before.tail}`);
    process.exit(2);
  }
  restore = () => writeFileSync(path, original);
  let after;
  try {
    writeFileSync(path, original.replace(m.from, m.to));
    if (m.build) build();
    after = runTest(m);
  } finally {
    restore();
    restore = undefined;
    if (m.build) build();
  }
  const killed = !after.passed;
  if (!killed) survived.push(m);
  console.log(`${killed ? 'killed  ' : 'SURVIVED'} ${m.name}: ${m.file} mutated, ${m.test} "${m.title}" ${killed ? 'fails' : 'still passes'}`);
}
console.log(`${chosen.length - survived.length} of ${chosen.length} mutations killed`);
if (survived.length) {
  console.error(`mutate: these tests cannot fail on what they name: ${survived.map((m) => m.name).join(', ')}`);
  process.exit(1);
}
