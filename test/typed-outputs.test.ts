// A kind's JSON output is read through its producer's descriptor: parsed, then checked against
// the schema generated from the producer's type. What does not hold is refused with the node and
// the output named, never read as if it did (the reader gets a value, or an error, never garbage).
import { describe, expect, it } from 'vitest';
import { parseJsonArtifact, readJsonArtifact } from '../pipeline/artifact.js';
import { sha256 } from '../pipeline/digest.js';
import type { OutputManifest } from '../pipeline/store/action-cache.js';
import { analyze } from '../stats/analyze.js';
import { defaultSpec } from '../stats/spec.js';
import { makeAttempt } from '../stats/synthetic.js';
import { ANALYSIS, ANALYZED_ATTEMPTS } from '../steps/analyze-step.js';
import { AUDIT_RECORD } from '../steps/audit.js';
import { GATE_DECISION } from '../steps/gate.js';
import { CHANGES } from '../steps/workspace.js';

const attempts = ['control', 'treatment'].flatMap((arm) =>
  [0, 1, 2, 3].map((t) => ({
    ...makeAttempt({ task: `t${t}`, family: `f${t}`, arm, rep: 0, pass: arm === 'treatment' || t === 0 }),
    mutation: { touched: [], out_of_bounds: [], verifier_owned: [], allowed_paths: ['src/**'] },
    leakage: [],
  })),
);
const analysis = analyze(attempts, defaultSpec('control', ['treatment'], { bootstrap: { resamples: 200, seed: 1 } }));
const text = (v: unknown) => JSON.stringify(v);

describe('typed step outputs', () => {
  it('what the producers write is what the readers accept', () => {
    expect(parseJsonArtifact(ANALYSIS, text(analysis), 'cohort')).toMatchObject({ ok: true });
    expect(parseJsonArtifact(ANALYZED_ATTEMPTS, text(attempts), 'cohort')).toMatchObject({ ok: true });
    expect(parseJsonArtifact(AUDIT_RECORD, text(attempts[0]), 'audit/t0/control/1')).toMatchObject({ ok: true });
    expect(parseJsonArtifact(GATE_DECISION, text({ schema_version: 1, gate: 'g', analysis: 'a', require: {}, pass: true, because: 'x' }), 'g')).toMatchObject({
      ok: true,
    });
  });

  it('an analysis whose verdict is not one of the verdicts, or that lost its comparisons, is refused, naming the node and the field', () => {
    const badVerdict = structuredClone(analysis) as unknown as { comparisons: { verdict: string }[] };
    badVerdict.comparisons[0]!.verdict = 'POSITIVE!!';
    const r = parseJsonArtifact(ANALYSIS, text(badVerdict), 'context-file');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/^context-file's analysis\.json is not the cohort's paired statistics and verdicts: \/comparisons\/0\/verdict /);
    const { comparisons: _, ...without } = analysis;
    const gone = parseJsonArtifact(ANALYSIS, text(without), 'context-file');
    expect(gone.ok === false && gone.error).toMatch(/must have required property 'comparisons'/);
    expect(parseJsonArtifact(ANALYSIS, '{"comparisons": [', 'context-file')).toMatchObject({ ok: false, error: expect.stringMatching(/is not JSON/) });
  });

  it('an audited attempt that lost its admission, or an attempts list with one such record, is refused', () => {
    const { admission: _, ...noAdmission } = attempts[2]!;
    expect(parseJsonArtifact(AUDIT_RECORD, text(noAdmission), 'audit/t2/control/1').ok).toBe(false);
    const list = parseJsonArtifact(ANALYZED_ATTEMPTS, text([attempts[0], noAdmission]), 'cohort');
    expect(list.ok === false && list.error).toMatch(/\/1 must have required property 'admission'/);
  });

  it("an attempt's changes.json whose written map or deleted list is not what run writes is refused before verify applies it", () => {
    const good = { schema_version: 1, written: { 'src/add.mjs': 'a'.repeat(64) }, deleted: ['old.txt'] };
    expect(parseJsonArtifact(CHANGES, text(good), 'attempts/t/a/1')).toMatchObject({ ok: true, value: good });
    expect(parseJsonArtifact(CHANGES, text({ ...good, deleted: '../../etc' }), 'attempts/t/a/1')).toEqual({
      ok: false,
      error: "attempts/t/a/1's changes.json is not the paths the attempt changed in the workspace: /deleted must be a list of paths",
    });
    expect(parseJsonArtifact(CHANGES, text({ ...good, written: ['src/add.mjs'] }), 'attempts/t/a/1').ok).toBe(false);
  });

  it('read from a record: absent when the node has no such output, the value or the refusal otherwise', () => {
    const blobs = new Map<string, Buffer>();
    const put = (s: string) => {
      const digest = sha256(s);
      blobs.set(digest, Buffer.from(s));
      return { type: 'file' as const, digest, size: s.length };
    };
    const read = (d: string) => blobs.get(d)!;
    expect(readJsonArtifact(GATE_DECISION, {} as OutputManifest, read, 'g')).toBeUndefined();
    const outputs = { [GATE_DECISION.name]: put(text({ gate: 'g', pass: 'yes', because: 'x' })) } as unknown as OutputManifest;
    expect(readJsonArtifact(GATE_DECISION, outputs, read, 'pilot-gate')).toEqual({
      ok: false,
      error: "pilot-gate's gate.json is not the gate's decision and the evidence for it: /pass must be a boolean",
    });
  });
});
