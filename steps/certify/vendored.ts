/** Where a package manager or a vendoring tool keeps copies of code (a lookbehind: nested ones match too). */
const VENDORED = /(?<=^|\/)(?:node_modules|vendor|third_party|site-packages|bower_components)\//g;

/**
 * The vendored package directory holding `path`: `node_modules/<name>/` (or `<scope>/<name>/`),
 * the innermost when they nest, with its trailing slash; null when `path` is not vendored.
 */
export function vendoredPackageDir(path: string): string | null {
  let end = -1;
  for (const m of path.matchAll(VENDORED)) end = m.index + m[0].length;
  if (end < 0) return null;
  const rest = path.slice(end).split('/');
  if (rest.length < 2) return null; // a file directly in node_modules/ is no package
  const name = rest[0]!.startsWith('@') ? rest.slice(0, 2).join('/') : rest[0]!;
  return `${path.slice(0, end)}${name}/`;
}

/** A directory path (no trailing '/') that is a vendored package directory or lies below one: what vendoredPackageDir says of every file below it. */
export const VENDORED_PACKAGE_DIR = /(?:^|\/)(?:node_modules|vendor|third_party|site-packages|bower_components)\/[^/]+/;
