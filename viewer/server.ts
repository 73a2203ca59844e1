import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BundleReader } from './bundle-reader.js';
import type { CohortView, Progress, ViewerState } from './view-types.js';

/** What the viewer shows: the cohorts it can open, and (watching a store) the run's progress. */
export interface ViewerData {
  cohorts(): { id: string; reader: BundleReader }[];
  progress(): Progress | null;
  /** The registry's version history of a cohort, in words (watching a store; a bundle holds only its own freeze record). */
  history?(cohort: string): string[];
}

export interface ViewerOptions {
  host: string;
  port: number;
  /** The compiled front end (index.html, app.js, app.css). */
  appDir: string;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

// Agent output is hostile: the app renders it as text, and the page may load nothing but its own
// script and style. The report is shown in a sandboxed frame that may run no script at all.
const APP_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; frame-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'";
const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox";

const ASSETS: Record<string, string> = {
  '/assets/app.js': 'text/javascript; charset=utf-8',
  '/assets/app.css': 'text/css; charset=utf-8',
};

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, csp = APP_CSP): void {
  res.writeHead(status, {
    'content-type': type,
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  });
  res.end(body);
}

function sendJson(res: ServerResponse, value: unknown): void {
  send(res, 200, 'application/json; charset=utf-8', JSON.stringify(value));
}

/** Whether the Host header names this server on loopback (a page on another site cannot rebind a name to 127.0.0.1 and read it). */
function hostAllowed(req: IncomingMessage, port: number, bound: string): boolean {
  if (!LOOPBACK.has(bound)) return true; // bound elsewhere on request: the user chose to expose it
  const host = req.headers.host ?? '';
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(host);
  if (!m) return false;
  const name = m[1]!.replace(/^\[|\]$/g, '');
  return LOOPBACK.has(name) && Number(m[2] ?? 80) === port;
}

function route(data: ViewerData, appDir: string, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://viewer');
  const path = url.pathname;
  if (path === '/api/state') {
    const state: ViewerState = {
      cohorts: data.cohorts().map(({ id, reader }) => {
        const r = reader.resultsFile();
        return { id, cohort: r.cohort, version: r.version };
      }),
      progress: data.progress(),
    };
    return sendJson(res, state);
  }
  const cohortRoute = /^\/api\/cohorts\/([^/]+)(?:\/attempts\/(.+))?$/.exec(path);
  if (cohortRoute) {
    const found = data.cohorts().find((c) => c.id === decodeURIComponent(cohortRoute[1]!));
    if (!found) return send(res, 404, 'application/json', JSON.stringify({ error: 'no such cohort' }));
    if (!cohortRoute[2]) {
      const own = found.reader.cohort();
      const view: CohortView = { ...own, history: data.history?.(own.cohort) ?? null };
      return sendJson(res, view);
    }
    const attempt = found.reader.attempt(decodeURIComponent(cohortRoute[2]));
    return attempt ? sendJson(res, attempt) : send(res, 404, 'application/json', JSON.stringify({ error: 'no such attempt' }));
  }
  const report = /^\/report\/([^/]+)$/.exec(path);
  if (report) {
    const found = data.cohorts().find((c) => c.id === decodeURIComponent(report[1]!));
    const html = found?.reader.file('report.html');
    return html ? send(res, 200, 'text/html; charset=utf-8', html, REPORT_CSP) : send(res, 404, 'text/plain', 'no report');
  }
  const asset = ASSETS[path];
  if (asset) return send(res, 200, asset, readFileSync(join(appDir, path.slice('/assets/'.length))));
  if (path === '/' || path === '/index.html') return send(res, 200, 'text/html; charset=utf-8', readFileSync(join(appDir, 'index.html')));
  send(res, 404, 'text/plain; charset=utf-8', 'not found');
}

/** Serves the viewer until closed: read-only (GET and HEAD only), on `host` (loopback unless asked). */
export function startViewer(data: ViewerData, options: ViewerOptions): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'the viewer is read-only');
    if (!hostAllowed(req, (server.address() as AddressInfo).port, options.host))
      return send(res, 403, 'text/plain', 'this viewer answers only on its own loopback address');
    try {
      route(data, options.appDir, req, res);
    } catch (e) {
      send(res, 500, 'text/plain; charset=utf-8', e instanceof Error ? e.message : String(e));
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      const { port } = server.address() as AddressInfo;
      const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
      resolve({
        url: `http://${shown}:${port}/`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}
