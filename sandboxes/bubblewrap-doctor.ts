/** doctor's check for the bubblewrap backend: bwrap builds a sandbox on this machine (user namespaces allowed). */
import { missing, pass, stepList } from '../pipeline/preflight.js';
import type { BackendDoctor } from './backend-doctor.js';
import { checkBubblewrap, findOnPath } from './bubblewrap.js';
import { splitHint } from './hint.js';

export const bubblewrapDoctor: BackendDoctor = async (uses, ctx) => {
  const name = `sandbox bubblewrap (${stepList(uses.map((u) => u.step))})`;
  const pathVar = ctx.env['PATH'] || undefined;
  const r = await checkBubblewrap(pathVar);
  return { checks: [r.ok ? pass(name, `bwrap at ${findOnPath('bwrap', pathVar)} builds a sandbox here`) : missing(name, ...splitHint(r.error))] };
};
