/** doctor's checks for the local backend: it always runs, unisolated, and enforces no egress but `open`. */
import { missing, pass, stepList } from '../pipeline/preflight.js';
import type { BackendDoctor } from './backend-doctor.js';

export const localDoctor: BackendDoctor = async (uses, ctx) => {
  const name = `sandbox local (${stepList(uses.map((u) => u.step))})`;
  const auto = uses.filter((u) => u.auto).map((u) => u.step);
  const fallback = auto.length ? ctx.fallback : null;
  const detail = `no isolation: runs as this user on this machine (recorded as such; a verdict from it is UNISOLATED)`;
  // Passes (a run works), but says why it is not isolated and what isolates it here.
  const checks = [
    fallback ? { ...pass(name, `${detail}; ${stepList(auto)} chose it by backend auto: ${fallback.cause}`), fix: fallback.fix } : pass(name, detail),
  ];
  for (const u of uses.filter((x) => x.egress !== 'open'))
    checks.push(
      missing(
        `sandbox local egress ${u.egress} (step ${u.step})`,
        `the local backend cannot enforce egress "${u.egress}" and refuses to start`,
        `use sandbox.backend bubblewrap or docker, or egress: open (recorded as not enforced)`,
      ),
    );
  return { checks };
};
