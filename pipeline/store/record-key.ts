import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { sha256 } from '../digest.js';
import { writeFileOnce } from '../atomic-write.js';

/**
 * The key that signs the store's records (its hash-chained logs). It lives outside the store,
 * so one who can rewrite the store cannot re-sign what they rewrote: $PAIRBENCH_RECORD_KEY
 * (an Ed25519 private key in PEM, as `openssl genpkey -algorithm ed25519` writes it; share it
 * between the machines that write one store), else one made on first use in the user's config
 * directory. A log entry carries its signer's public key; which signers are trusted is for the
 * reader to say (this key, and those a committed lock names).
 */
export interface RecordKey {
  /** sha256 of the raw public key, first 16 hex: how a lock and a message name it. */
  id: string;
  /** Where it is (for messages). */
  path: string;
  sign(hash: string): { key: string; pub: string; sig: string };
}

/** Where the record key is read from, for this environment. */
export function recordKeyPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env['PAIRBENCH_RECORD_KEY']) return env['PAIRBENCH_RECORD_KEY'];
  const config = env['XDG_CONFIG_HOME'] || join(env['HOME'] || homedir(), '.config');
  return join(config, 'pairbench', 'record-key.pem');
}

function rawPublic(key: KeyObject): Buffer {
  // The last 32 bytes of an Ed25519 SPKI DER are the raw key.
  return createPublicKey(key).export({ type: 'spki', format: 'der' }).subarray(-32);
}

export function keyIdOf(rawPub: Buffer): string {
  return sha256(rawPub).slice(0, 16);
}

/** Made once, with a hard link (two first runs at once agree on one key), private to its user. */
function makeKey(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const { privateKey } = generateKeyPairSync('ed25519');
  writeFileOnce(path, privateKey.export({ type: 'pkcs8', format: 'pem' }), { label: 'record-key', mode: 0o600 });
}

/** The record key cannot be had: what the message says is the user's to fix (cli/main.ts gives the hint). */
export class RecordKeyError extends Error {}

const loaded = new Map<string, RecordKey>();

/** This machine's record key (made when it does not exist and no path was given). */
export function recordKey(env: NodeJS.ProcessEnv = process.env): RecordKey {
  const path = recordKeyPath(env);
  const had = loaded.get(path);
  if (had) return had;
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || env['PAIRBENCH_RECORD_KEY'])
      throw new RecordKeyError(`the record key ${path} cannot be read: ${(e as Error).message}`, { cause: e });
    makeKey(path);
    pem = readFileSync(path, 'utf8');
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (e) {
    throw new RecordKeyError(
      `the record key ${path} is not a private key in PEM (${(e as Error).message}): make one with openssl genpkey -algorithm ed25519 -out ${path}`,
      { cause: e },
    );
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new RecordKeyError(`the record key ${path} is ${key.asymmetricKeyType ?? 'not asymmetric'}, not Ed25519`);
  const pub = rawPublic(key);
  const out: RecordKey = {
    id: keyIdOf(pub),
    path,
    sign: (hash) => ({ key: keyIdOf(pub), pub: pub.toString('base64'), sig: sign(null, Buffer.from(hash), key).toString('base64') }),
  };
  loaded.set(path, out);
  return out;
}

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const verified = new Set<string>();

/** Whether `sig` is `pub`'s signature of `hash`, and `key` names `pub` (each answer computed once per process). */
export function signatureHolds(hash: string, s: { key: string; pub: string; sig: string }): boolean {
  const memo = `${hash}:${s.pub}:${s.sig}`;
  if (verified.has(memo)) return true;
  try {
    const raw = Buffer.from(s.pub, 'base64');
    if (raw.length !== 32 || keyIdOf(raw) !== s.key) return false;
    const pub = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
    if (!verify(null, Buffer.from(hash), pub, Buffer.from(s.sig, 'base64'))) return false;
  } catch {
    return false;
  }
  verified.add(memo);
  return true;
}
