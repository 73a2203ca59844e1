#!/usr/bin/env node
// Posts FILE as the pull request's pairbench comment, or updates the one already there: one
// comment per pull request, whatever the number of pushes. The comment is found by its marker
// and its author (the token's bot), so a comment someone else wrote with the marker is never
// edited. Reads GITHUB_API_URL, GITHUB_REPOSITORY, PULL_REQUEST, GITHUB_TOKEN and
// COMMENT_AUTHOR (default github-actions[bot], the GITHUB_TOKEN's identity).
import { readFileSync } from 'node:fs';

const MARKER = '<!-- pairbench -->';
/** GitHub refuses a comment body over 65,536 characters. */
const MAX_BODY = 65_536;
/** Pages of 100 comments read at most (10,000 comments). */
const MAX_PAGES = 100;

function need(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`::error::comment.mjs: ${name} is not set`);
    process.exit(1);
  }
  return v;
}

const file = process.argv[2];
if (!file) {
  console.error('usage: comment.mjs FILE');
  process.exit(2);
}
const api = (process.env.GITHUB_API_URL || 'https://api.github.com').replace(/\/$/, '');
const repo = need('GITHUB_REPOSITORY');
const pr = need('PULL_REQUEST');
const token = need('GITHUB_TOKEN');
const author = process.env.COMMENT_AUTHOR || 'github-actions[bot]';

let body = `${MARKER}\n${readFileSync(file, 'utf8')}`;
if (body.length > MAX_BODY) {
  const note = '\n\n… cut here: the whole comparison is in the job summary and the bundle artifact.\n';
  body = body.slice(0, MAX_BODY - note.length) + note;
}

async function call(method, path, payload) {
  const res = await fetch(`${api}${path}`, {
    method,
    headers: {
      accept: 'application/vnd.github+json',
      authorization: `Bearer ${token}`,
      'x-github-api-version': '2022-11-28',
      'user-agent': 'pairbench-action',
      ...(payload ? { 'content-type': 'application/json' } : {}),
    },
    ...(payload ? { body: JSON.stringify(payload) } : {}),
  });
  const text = await res.text();
  if (!res.ok) {
    const message = (() => {
      try {
        return JSON.parse(text).message;
      } catch {
        return text.slice(0, 200);
      }
    })();
    return { ok: false, status: res.status, message };
  }
  return { ok: true, value: text ? JSON.parse(text) : null };
}

function failed(what, r) {
  // A pull request from a fork gets a read-only token: the verdict is in the job summary instead.
  if (r.status === 403 || r.status === 404) {
    console.log(
      `::warning::pairbench could not ${what} (HTTP ${r.status}: ${r.message}): the token needs pull-requests: write (a fork's pull request has a read-only token); the comparison is in the job summary`,
    );
    process.exit(0);
  }
  console.error(`::error::pairbench could not ${what}: HTTP ${r.status}: ${r.message}`);
  process.exit(1);
}

let mine = null;
for (let page = 1; page <= MAX_PAGES && !mine; page++) {
  const r = await call('GET', `/repos/${repo}/issues/${pr}/comments?per_page=100&page=${page}`);
  if (!r.ok) failed(`list the comments of pull request #${pr}`, r);
  const comments = Array.isArray(r.value) ? r.value : [];
  mine = comments.find((c) => typeof c.body === 'string' && c.body.startsWith(MARKER) && c.user?.login === author) ?? null;
  if (comments.length < 100) break;
}
const r = mine
  ? await call('PATCH', `/repos/${repo}/issues/comments/${mine.id}`, { body })
  : await call('POST', `/repos/${repo}/issues/${pr}/comments`, { body });
if (!r.ok) failed(`${mine ? 'update' : 'post'} the comment on pull request #${pr}`, r);
console.log(`${mine ? 'updated' : 'posted'} the pairbench comment on pull request #${pr}: ${r.value?.html_url ?? ''}`);
