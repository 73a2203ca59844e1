/** Reading a Dockerfile without an engine (the CLI keys environment nodes on its base images). */

/** Image names a Dockerfile builds FROM (stage aliases and `scratch` left out). */
export function baseImages(dockerfile: string): string[] {
  const stages = new Set<string>();
  const out: string[] = [];
  for (const raw of dockerfile.replace(/\\\r?\n/g, ' ').split(/\r?\n/)) {
    const m = /^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?/i.exec(raw);
    if (!m) continue;
    const name = m[1]!;
    if (name !== 'scratch' && !stages.has(name.toLowerCase()) && !out.includes(name)) out.push(name);
    if (m[2]) stages.add(m[2].toLowerCase());
  }
  return out;
}
