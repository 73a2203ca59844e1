/**
 * Where an arm's treatment files come from: a file or directory beside the config
 * (`CLAUDE.md: context/CLAUDE.md`, a file input hashed into the attempt's key), or
 * an output of another step (`CLAUDE.md: {from: primer-generate, out: CLAUDE.md}`),
 * keyed by the producing node's output digest, so what an arm receives is exactly
 * what that step produced.
 */
import { normalize } from 'node:path';
import type { StepConfig } from '../pipeline/config/load.js';
import type { StagedFile, UpstreamOutputs, GraphNode } from '../pipeline/step-kind.js';
import { specIf } from './step-spec.js';
import type { OutputEntry } from '../pipeline/store/cas.js';

export type TreatmentSource = string | { from: string; out: string };

export function isStepOutput(src: TreatmentSource): src is { from: string; out: string } {
  return typeof src === 'object' && src !== null;
}

/** The config paths among an arm's sources (file inputs); step outputs are not. */
export function fileSources(files: Readonly<Record<string, TreatmentSource>> | undefined): [string, string][] {
  return Object.entries(files ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string');
}

/** Which outputs of step `stepName` the given arms read. */
export function outputsReadFrom(arms: readonly { files?: Record<string, TreatmentSource> }[], stepName: string): string[] {
  const outs = new Set<string>();
  for (const a of arms) for (const src of Object.values(a.files ?? {})) if (isStepOutput(src) && src.from === stepName) outs.add(src.out);
  return [...outs].sort();
}

/** The steps any of the arms read an output of. */
export function producerSteps(arms: readonly { files?: Record<string, TreatmentSource> }[]): Set<string> {
  const out = new Set<string>();
  for (const a of arms) for (const src of Object.values(a.files ?? {})) if (isStepOutput(src)) out.add(src.from);
  return out;
}

/** "context/CLAUDE.md" or "primer-generate:CLAUDE.md": how a source is named in logs and reports. */
export function sourceLabel(src: TreatmentSource): string {
  return isStepOutput(src) ? `${src.from}:${src.out}` : src;
}

/** A config path as the input resolver records it (`./a//b.md` -> `a/b.md`). */
export function normalizedPath(p: string): string {
  return normalize(p).replaceAll('\\', '/').replace(/\/$/, '');
}

/**
 * The stored entry a source names for this node: the staged file input, or the
 * output of the producing node among the node's upstreams.
 */
export function treatmentEntry(
  src: TreatmentSource,
  node: GraphNode,
  files: readonly StagedFile[],
  upstream: readonly UpstreamOutputs[],
): OutputEntry | undefined {
  if (!isStepOutput(src)) return files.find((f) => f.path === normalizedPath(src))?.entry;
  const producers = new Set(node.upstream.filter((u) => u.step.name === src.from).map((u) => u.id));
  return upstream.find((u) => producers.has(u.node) && u.outputs[src.out])?.outputs[src.out];
}

/**
 * The arms a pull request may change (`pairbench review`): every arm of a run step but the
 * control of an analysis that reads it. A control is the protocol: what a treatment is measured
 * against is the base's to say.
 */
export function armsUnderReview(steps: readonly StepConfig[]): Map<string, Set<string>> {
  const controls = new Set(steps.flatMap((s) => specIf(s, 'analyze')?.control ?? []));
  const out = new Map<string, Set<string>>();
  for (const s of steps) {
    const run = specIf(s, 'run');
    if (!run) continue;
    out.set(s.name, new Set(Object.keys(run.arms).filter((a) => !controls.has(a))));
  }
  return out;
}
