// A node's log is held in memory until a step asks for it as a file (a child process writing to
// it): nothing logged before, by the child, or after may be lost, and a log never asked for as a
// file makes no file.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { NodeLog } from '../pipeline/node-log.js';

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'pairbench-node-log-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it('a log only logged to makes no file, and keeps every line', () => {
  const log = new NodeLog(join(dir, 'work.log'));
  log.append('one\n');
  log.append('two\n');
  expect(existsSync(join(dir, 'work.log'))).toBe(false);
  expect(log.bytes().toString()).toBe('one\ntwo\n');
  log.remove();
});

it('lines logged before, written by a child process to the file, and logged after are all kept, in order', () => {
  const log = new NodeLog(join(dir, 'work.log'));
  log.append('before\n');
  execFileSync('/bin/sh', ['-c', 'echo "from the child" >> "$1"', 'sh', log.file()]);
  log.append('after\n');
  expect(readFileSync(join(dir, 'work.log'), 'utf8')).toBe('before\nfrom the child\nafter\n');
  expect(log.bytes().toString()).toBe('before\nfrom the child\nafter\n');
  log.remove();
  expect(existsSync(join(dir, 'work.log'))).toBe(false);
});
