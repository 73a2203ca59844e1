/**
 * The workspace of the action's test and the pull-request job bench: a team's repository built
 * from the shipped example (its config, CLAUDE.md, tasks and scripted model as they ship, its task
 * repositories), a checkout as actions/checkout and npm ci leave it, actions/cache scoped as
 * GitHub scopes it, and the part of GitHub's REST API the comment step uses, on loopback.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join, resolve } from 'node:path';

export interface Comment {
  id: number;
  body: string;
  user: { login: string };
  html_url: string;
}

/** The part of GitHub's REST API the comment step uses, on loopback: the pull requests' comments. */
export function fakeGitHub(
  token: string,
  bot = 'github-actions[bot]',
): { server: Server; url: () => string; comments: Map<number, Comment[]>; calls: string[] } {
  const comments = new Map<number, Comment[]>();
  const calls: string[] = [];
  let next = 100;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const reply = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.headers.authorization !== `Bearer ${token}`) return reply(401, { message: 'Bad credentials' });
      const url = new URL(req.url ?? '/', 'http://x');
      calls.push(`${req.method} ${url.pathname}`);
      const list = /^\/repos\/team\/app\/issues\/(\d+)\/comments$/.exec(url.pathname);
      const one = /^\/repos\/team\/app\/issues\/comments\/(\d+)$/.exec(url.pathname);
      if (list) {
        const pr = comments.get(Number(list[1])) ?? [];
        comments.set(Number(list[1]), pr);
        if (req.method === 'GET') {
          const per = Number(url.searchParams.get('per_page') ?? 30);
          const page = Number(url.searchParams.get('page') ?? 1);
          return reply(200, pr.slice((page - 1) * per, page * per));
        }
        if (req.method === 'POST') {
          const c = {
            id: next++,
            body: (JSON.parse(body) as { body: string }).body,
            user: { login: bot },
            html_url: `https://github.test/team/app/pull/${list[1]}#c${next}`,
          };
          pr.push(c);
          return reply(201, c);
        }
      }
      const found = one ? [...comments.values()].flat().find((c) => c.id === Number(one[1])) : undefined;
      if (found && req.method === 'PATCH') {
        if (found.user.login !== bot) return reply(403, { message: 'Resource not accessible by integration' });
        found.body = (JSON.parse(body) as { body: string }).body;
        return reply(200, found);
      }
      return reply(404, { message: 'Not Found' });
    });
  });
  return { server, url: () => `http://127.0.0.1:${(server.address() as { port: number }).port}`, comments, calls };
}

/** An HTTP server that records every request (method, path, credential) and has nothing: a cache that misses. */
export function recorder(host: string): { server: Server; url: () => string; requests: { method: string; path: string; authorization: string | undefined }[] } {
  const requests: { method: string; path: string; authorization: string | undefined }[] = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => res.writeHead(404).end());
  });
  return { server, url: () => `http://${host}:${(server.address() as { port: number }).port}`, requests };
}

/** actions/cache as GitHub scopes it: a save belongs to its ref; a pull request reads its own and main's. */
export class FakeActionsCache {
  private readonly entries: { key: string; scope: string; dir: string }[] = [];
  constructor(private readonly dir: string) {}

  restore(scope: string, w: Record<string, string>, workspace: string): void {
    const visible = this.entries.filter((e) => e.scope === scope || e.scope === 'main').reverse();
    const prefixes = (w['restore-keys'] ?? '')
      .split('\n')
      .map((s) => s.trim())
      .filter(Boolean);
    const hit = visible.find((e) => e.key === w['key']) ?? prefixes.map((p) => visible.find((e) => e.key.startsWith(p))).find(Boolean);
    if (hit) cpSync(hit.dir, resolve(workspace, w['path']!), { recursive: true });
  }

  save(scope: string, w: Record<string, string>, workspace: string): void {
    const from = resolve(workspace, w['path']!);
    if (!existsSync(from) || this.entries.some((e) => e.key === w['key'])) return; // GitHub keeps the first save of a key
    const dir = join(this.dir, String(this.entries.length));
    cpSync(from, dir, { recursive: true });
    this.entries.push({ key: w['key']!, scope, dir });
  }

  /** A save made before (a store main's earlier runs left), under `key`. */
  seed(scope: string, key: string, dir: string): void {
    this.entries.push({ key, scope, dir });
  }

  keys(): string[] {
    return this.entries.map((e) => `${e.scope} ${e.key}`);
  }
}

export const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
export const commit = (cwd: string, message: string) => git(cwd, '-c', 'user.name=dev', '-c', 'user.email=dev@example.test', 'commit', '-q', '-am', message);

/**
 * A team's repository: the shipped example's config, tasks, CLAUDE.md and scripted model as
 * they ship, and its task repositories. pairbench is its dev dependency (node_modules/.bin, as
 * npm ci installs it).
 */
export function teamRepository(dir: string, root: string): void {
  mkdirSync(dir, { recursive: true });
  cpSync(join(root, 'bench.config.yaml'), join(dir, 'bench.config.yaml'));
  cpSync(join(root, 'examples', 'toy'), join(dir, 'examples', 'toy'), { recursive: true });
  mkdirSync(join(dir, 'examples', 'cohorts', 'fixtures'), { recursive: true });
  symlinkSync(join(root, 'examples', 'cohorts', 'fixtures', 'repos'), join(dir, 'examples', 'cohorts', 'fixtures', 'repos'));
  writeFileSync(join(dir, '.gitignore'), 'node_modules/\n.pairbench/\n');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'money-app', private: true, devDependencies: { pairbench: '0.1.0' } }, null, 2) + '\n');
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, '-c', 'user.name=team', '-c', 'user.email=team@example.test', 'commit', '-q', '-m', 'the money conventions, measured');
}

/** A fresh checkout of `ref` (actions/checkout with fetch-depth 0), with the dev dependencies installed (npm ci). */
export function checkout(origin: string, dir: string, ref: string, root: string): string {
  execFileSync('git', ['clone', '-q', origin, dir]);
  git(dir, 'checkout', '-q', ref);
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(join(root, 'bin', 'pairbench.js'), join(dir, 'node_modules', '.bin', 'pairbench'));
  return git(dir, 'rev-parse', 'HEAD');
}
