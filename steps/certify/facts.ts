/**
 * Stele's rule: a task that measures a memory must need it. Each fact the task's
 * answer depends on (task.yaml `facts:`) must be nowhere an agent without the memory
 * can read it (the prompt, the starting tree), and must be in the memory under test
 * (an arm's treatment files). Matching ignores case and runs of whitespace.
 */
import type { Surface } from './scan.js';

const fold = (s: string) => s.toLowerCase().replace(/\s+/g, ' ').trim();

/** Where the fact is visible: "tree src/config.mjs:3" (the first place), or null. */
function visibleAt(fact: string, surface: Surface): string | null {
  const f = fold(fact);
  for (const file of surface.files) {
    const lines = file.text.split('\n');
    const i = lines.findIndex((l) => fold(l).includes(f));
    if (i >= 0) return `${surface.name} ${file.path}:${i + 1}`;
    // A fact wrapped over lines: the line where it starts.
    if (!fold(file.text).includes(f)) continue;
    const end = lines.findIndex((_, k) => fold(lines.slice(0, k + 1).join('\n')).includes(f));
    let start = end;
    while (start > 0 && !fold(lines.slice(start, end + 1).join('\n')).includes(f)) start--;
    return `${surface.name} ${file.path}:${start + 1}`;
  }
  return null;
}

/**
 * Rejection reasons for the task's facts. `memoryArms` names the arms whose treatment
 * holds the memory (e.g. ["memory"]); empty: any arm's treatment counts.
 */
export function factProblems(facts: readonly string[], surfaces: readonly Surface[], memoryArms: readonly string[]): string[] {
  const reasons: string[] = [];
  const visible = surfaces.filter((s) => s.kind === 'prompt' || s.kind === 'tree');
  const armOf = (s: Surface) => s.name.split(':').pop()!;
  const memory = surfaces.filter((s) => s.kind === 'treatment' && (memoryArms.length === 0 || memoryArms.includes(armOf(s))));
  for (const fact of facts) {
    const seen = visible.map((s) => visibleAt(fact, s)).find((x) => x !== null);
    if (seen)
      reasons.push(
        `memory-not-needed: the fact "${fact}" the answer depends on is visible without the memory, in ${seen}: an agent can answer without the memory under test (remove it from the task's tree or prompt, or choose another fact)`,
      );
    if (!memory.some((s) => visibleAt(fact, s) !== null)) {
      reasons.push(
        `memory-missing-fact: the fact "${fact}" is in no ${memoryArms.length ? `treatment of arm ${memoryArms.join(', ')}` : "arm's treatment"}: the memory under test cannot supply it (add it to the memory fixture, or fix the fact)`,
      );
    }
  }
  return reasons;
}
