/**
 * What a verification's verdict.json holds, as verify writes it and audit, judge and the Harbor
 * export read it (through verify's VERIFIER_VERDICT descriptor, checked against the schema
 * generated from this type). Types only. The fields marked optional are absent in verdicts
 * recorded before they were added; readers take the absence as none.
 */
import type { CanaryOutcome } from './verifier-canary.js';
import type { Forgery, RewardFile, TestEvidence } from './verifier-run.js';
import type { VerifierRuns } from './verifier-repeats.js';

export interface VerifierVerdict {
  schema_version: 1;
  task: string;
  node: string;
  /** null: no verdict (an infrastructure fault of the verifier; the attempt is excluded). */
  pass: boolean | null;
  fail_to_pass: Record<string, TestEvidence['status']>;
  pass_to_pass: Record<string, TestEvidence['status']>;
  command: TestEvidence['status'] | null;
  reward: Record<string, number> | null;
  /** The file the reward came from (Harbor: reward.txt or reward.json), as the task wrote it. */
  reward_file?: RewardFile | null;
  /** A pass the code under test forced (a canary that passed, reward files that disagree): failed. */
  forgery?: Forgery | null;
  canaries?: Record<string, CanaryOutcome>;
  /** Verifier-owned files the attempt changed: the verifier ran with the pristine ones. */
  verifier_owned_kept_pristine?: string[];
  /** Why there is no verdict (pass null). */
  no_verdict?: string | null;
  /** How many times the verifier ran on these changes (verify's `repeats`) and what the runs gave. */
  runs?: VerifierRuns;
  /** The runs disagreed (pass null): the verifier cannot score this task; the analysis excludes all its attempts. */
  flaky_verifier?: string | null;
  sandbox: { backend: string; isolation: string; image_id: string | null };
}
