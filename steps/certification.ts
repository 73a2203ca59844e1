/**
 * What certify publishes to the kinds that read it: its name and its verdict output. A module of
 * its own because run reads a certification and certify imports run (its agents apply the
 * reference solution): both import this, neither the other for it.
 */
import { jsonArtifact } from '../pipeline/artifact.js';

export const CERTIFY_KIND = 'certify';

/** certify's verdict.json: certified or rejected, and why (a run of a rejected task is refused). */
export interface CertificationVerdict {
  task: string;
  verdict: 'certified' | 'rejected';
  reasons: string[];
}

export const CERTIFICATION_VERDICT = jsonArtifact<CertificationVerdict>('verdict.json', 'certified or rejected', (v) => {
  const c = v as Partial<CertificationVerdict> | null;
  if (!c || typeof c !== 'object') return ['/ must be an object'];
  return [
    ...(typeof c.task === 'string' ? [] : ['/task must be a string']),
    ...(c.verdict === 'certified' || c.verdict === 'rejected' ? [] : ['/verdict must be "certified" or "rejected"']),
    ...(Array.isArray(c.reasons) && c.reasons.every((r) => typeof r === 'string') ? [] : ['/reasons must be a list of strings']),
  ];
});
