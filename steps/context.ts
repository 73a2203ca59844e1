import { lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import picomatch from 'picomatch';
import type { Json } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { err, errorMessage, ok } from '../pipeline/result.js';
import type { ExecutionContext, StepKind } from '../pipeline/step-kind.js';
import { DEFAULT_DOCUMENTATION, DEFAULT_REDACTION, ensureMirror, treeEntries } from './materialize.js';
import { extractTree } from './git-archive.js';
import { callModel, checkModelSpec, MODEL_EXCHANGE, modelInputs, modelKey } from './model-call.js';
import { artifact } from '../pipeline/artifact.js';
import { specOf, type SpecByKind } from './step-spec.js';

/** What generating the file cost: the overhead stream, never summed with the attempts. */
const CONTEXT_COST = artifact('cost.json', 'what generating it cost (the overhead stream, never summed with the attempts)');
const CONTEXT_REQUEST = artifact('request.md', 'what the model was asked');
/** What a context node records beside the file it generates (whose name `out` may not take). */
const CONTEXT_RECORDS = [CONTEXT_COST, CONTEXT_REQUEST, MODEL_EXCHANGE] as const;

/**
 * `context` (Layer 1): a provider writes the context file an arm then receives
 * (`files: {CLAUDE.md: {from: STEP, out: CLAUDE.md}}`). One request through the
 * recording gateway: the frozen prompt, then the repository's files at the pinned
 * commit. Its usage and cost are the overhead stream (cost.json), never eval cost.
 */
type ContextSpec = SpecByKind['context'];

const spec = (step: StepConfig): ContextSpec => specOf(step, 'context');

/** What the generator is not shown: the instruction files (as no arm sees them), and documentation when removed. */
function hiddenOf(s: ContextSpec): string[] {
  const docs = s.remove_documentation === true ? DEFAULT_DOCUMENTATION : Array.isArray(s.remove_documentation) ? s.remove_documentation : [];
  return [...(s.redact ?? DEFAULT_REDACTION), ...docs];
}
const outName = (s: ContextSpec) => s.out ?? 'CLAUDE.md';
// What one request carries of the repository: larger files are listed, not sent.
const MAX_FILE_BYTES = 64 * 1024;
const MAX_TOTAL_BYTES = 512 * 1024;

const SYSTEM = "You write the context file a coding agent reads before it works in this repository. Answer with the file's contents only.";

/** The request's text: the prompt, then each included file (binary and oversized ones listed by name). */
export function contextRequest(prompt: string, tree: string, include: string[], hidden: string[] = []): { text: string; sent: string[]; listed: string[] } {
  const included = picomatch(include, { dot: true });
  const isHidden = hidden.length ? picomatch(hidden, { dot: true }) : () => false;
  const wanted = (p: string) => included(p) && !isHidden(p);
  const sent: string[] = [];
  const listed: string[] = [];
  const parts = [prompt.trimEnd(), '', '# The repository'];
  let total = 0;
  for (const p of treeEntries(tree)) {
    // Regular files only: a link in the repository is never followed out of it.
    if (!wanted(p) || !lstatSync(join(tree, p)).isFile()) continue;
    const bytes = readFileSync(join(tree, p));
    if (bytes.length > MAX_FILE_BYTES || total + bytes.length > MAX_TOTAL_BYTES || bytes.includes(0)) {
      listed.push(p);
      continue;
    }
    total += bytes.length;
    sent.push(p);
    parts.push('', `## ${p}`, '```', bytes.toString('utf8').replace(/\n$/, ''), '```');
  }
  if (listed.length) parts.push('', `Also in the repository (not shown): ${listed.join(', ')}`);
  return { text: parts.join('\n') + '\n', sent, listed };
}

export const contextStep: StepKind = {
  name: 'context',
  // The commit pins the tree the generator reads: the repository's path is only where to find it.
  unfrozen: ['repo'],
  title: { one: 'context generation', many: 'context generations' },
  preflight: async (steps, ctx) => (await import('./provider-preflight.js')).modelCallPreflight(steps, ctx),
  outputs: (step) => [artifact(outName(spec(step)), 'the generated context file'), ...CONTEXT_RECORDS],
  version: 1,

  check(step) {
    const s = spec(step);
    const problems: Diagnostic[] = [...checkModelSpec(step)];
    const at = (f: string) => ({ field: `steps.${step.name}.${f}`, location: step.source.locate([...step.path, f]) });
    if (!s.repo || !s.commit)
      problems.push({
        ...at('repo'),
        message: 'a context step reads a repository at a pinned commit: give repo (a git repository, relative to the config) and commit (40 hex digits)',
      });
    else if (!/^[0-9a-f]{40}$/.test(s.commit))
      problems.push({ ...at('commit'), message: `commit "${s.commit}" is not a full commit id (40 hex digits): a branch or tag moves` });
    if (!s.prompt?.trim()) problems.push({ ...at('prompt'), message: 'a context step needs prompt: the frozen instruction the provider writes the file from' });
    if (s.out !== undefined && (s.out.includes('..') || s.out.startsWith('/') || CONTEXT_RECORDS.some((r) => r.name === s.out))) {
      problems.push({ ...at('out'), message: `out "${s.out}" must be a plain relative file name other than ${CONTEXT_RECORDS.map((r) => r.name).join(', ')}` });
    }
    if (step.matrix.length)
      problems.push({ ...at('matrix'), message: 'a context step has no matrix: it writes one file for the repository, which every node that asks reads' });
    return problems;
  },

  keyConfig(node): Json {
    const s = spec(node.step);
    return {
      commit: s.commit,
      subdir: s.subdir ?? null,
      prompt: s.prompt,
      out: outName(s),
      include: s.include ?? ['**'],
      hidden: hiddenOf(s),
      model: modelKey(s.model),
      system: SYSTEM,
    };
  },
  fileInputs: (node) => modelInputs(spec(node.step).model),
  describeConfigField: (path) => ({ prompt: 'generation prompt', commit: 'repo commit', include: 'included files', model: 'model' })[path[0] ?? ''],

  async execute(ctx: ExecutionContext) {
    const s = spec(ctx.node.step);
    const tree = join(ctx.workDir, 'tree');
    mkdirSync(tree, { recursive: true });
    try {
      const source = resolve(ctx.node.step.rootDir, s.repo);
      const mirror = await ensureMirror(ctx.mirrorOf(source), source, s.commit);
      await extractTree(mirror, s.subdir ? `${s.commit}:${s.subdir}` : s.commit, tree);
    } catch (e) {
      ctx.log(errorMessage(e));
      return err({ reason: 'refused', message: `cannot read ${s.repo}@${s.commit.slice(0, 12)}: ${errorMessage(e).split('\n')[0]}` });
    }
    const request = contextRequest(s.prompt, tree, s.include ?? ['**'], hiddenOf(s));
    ctx.log(
      `sending the prompt and ${request.sent.length} file(s) to ${s.model.name}${request.listed.length ? ` (${request.listed.length} listed by name only)` : ''}`,
    );
    const out = join(ctx.workDir, 'out');
    mkdirSync(out);
    writeFileSync(join(out, CONTEXT_REQUEST.name), request.text);
    const reply = await callModel(ctx, s.model, { system: SYSTEM, user: request.text }, join(out, MODEL_EXCHANGE.name));
    if (!reply.ok) {
      ctx.log(reply.error);
      return err({ reason: 'infra', message: `context step ${ctx.node.step.name}: ${reply.error}` });
    }
    if (!reply.value.text.trim())
      return err({ reason: 'infra', message: `context step ${ctx.node.step.name}: the model answered with no text; nothing to give the arm` });
    writeFileSync(join(out, outName(s)), reply.value.text.endsWith('\n') ? reply.value.text : reply.value.text + '\n');
    const u = reply.value.usage;
    const tokens = u ? u.input_tokens + u.output_tokens + u.cache_write_tokens + u.cache_read_tokens : null;
    writeFileSync(
      join(out, CONTEXT_COST.name),
      JSON.stringify(
        { usd: reply.value.cost_usd, tokens, confidence: reply.value.cost_confidence, model_source: reply.value.model_source, model: s.model.name, usage: u },
        null,
        2,
      ) + '\n',
    );
    ctx.log(
      `wrote ${outName(s)} (${Buffer.byteLength(reply.value.text)} bytes); ${tokens ?? 'unknown'} tokens, ${reply.value.cost_usd === null ? 'unpriced' : `$${reply.value.cost_usd.toFixed(4)}`}`,
    );
    return ok(Object.fromEntries([outName(s), ...CONTEXT_RECORDS.map((r) => r.name)].map((n) => [n, ctx.artifacts.putPath(join(out, n))])));
  },
};
