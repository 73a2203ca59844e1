import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { packageRoot } from './package-root.js';

/**
 * The directory of an npm package as Node resolves it from `from` (default: pairbench's own
 * directory): pairbench's node_modules first, then every node_modules above it, so an agent
 * CLI installed beside pairbench (in the same project, or globally with it) is found. Null
 * when it is not installed.
 */
export function installedPackageDir(name: string, from: string = packageRoot()): string | null {
  try {
    return dirname(createRequire(join(from, 'package.json')).resolve(`${name}/package.json`));
  } catch {
    return null;
  }
}

/** Where pairbench itself is installed, which decides the command that installs a package beside it. */
export type PairbenchInstall = { kind: 'checkout'; dir: string } | { kind: 'global'; prefix: string } | { kind: 'project'; dir: string };

export function pairbenchInstall(root: string = packageRoot()): PairbenchInstall {
  const parent = dirname(root);
  if (basename(parent) !== 'node_modules') return { kind: 'checkout', dir: root };
  // npm's global layout is PREFIX/lib/node_modules/pairbench; a project's is DIR/node_modules/pairbench.
  const above = dirname(parent);
  if (basename(above) === 'lib') return { kind: 'global', prefix: dirname(above) };
  return { kind: 'project', dir: above };
}

/** The command that installs `spec` (name@version) where this pairbench finds it. */
export function installCommand(spec: string, install: PairbenchInstall = pairbenchInstall()): string {
  switch (install.kind) {
    case 'checkout':
      return `run npm ci in ${install.dir} (installs ${spec})`;
    case 'global':
      return `npm install --global --prefix ${install.prefix} ${spec}`;
    case 'project':
      return `npm install --save-dev ${spec} (in ${install.dir})`;
  }
}

/** What a command needs from an optional dependency that is not installed: the package and how to install it. */
export class MissingOptionalDependency extends Error {
  constructor(
    readonly pkg: string,
    readonly needed: string,
  ) {
    super(`${needed} needs ${pkg}, an optional dependency of pairbench that is not installed; install it: ${installCommand(pkg)}`);
  }
}

/** The version pairbench's package.json pins for a package (an optional dependency: installed with pairbench unless omitted). */
export function pinnedVersion(pkg: string): string | null {
  try {
    const json = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as Partial<
      Record<'dependencies' | 'optionalDependencies' | 'devDependencies', Record<string, string>>
    >;
    return json.optionalDependencies?.[pkg] ?? json.dependencies?.[pkg] ?? json.devDependencies?.[pkg] ?? null;
  } catch {
    return null;
  }
}

/** `pkg@pinned`, the spec that installs what package.json pins. */
export function pinnedSpec(pkg: string): string {
  const pinned = pinnedVersion(pkg);
  return pinned ? `${pkg}@${pinned}` : pkg;
}

/** An optional dependency, loaded on first use, or a MissingOptionalDependency naming the install command. */
export function requireOptional<T>(pkg: string, needed: string): T {
  if (!installedPackageDir(pkg)) throw new MissingOptionalDependency(pinnedSpec(pkg), needed);
  return createRequire(join(packageRoot(), 'package.json'))(pkg) as T;
}
