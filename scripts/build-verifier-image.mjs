#!/usr/bin/env node
// The verifier image of cohorts/primer-context-file.yaml, built without a registry and
// reproducibly: this machine's `sh`, `sleep` and `node` and the shared libraries `ldd` lists
// for them, an agent user, and empty /tmp and /work, packed as one layer
// with every time stamp, owner and mode fixed, and `docker load`ed with a config whose creation
// time is the epoch. The image ID is the digest of that config, so the same host files give the
// same ID on any machine: the cohort pins it (`image: sha256:...`), every verify key carries
// it, and each report shows it.
//
// The host files the build read are recorded beside the pin (examples/cohorts/fixtures/
// verifier-image.json, each with its sha256). A build that reads the same bytes and gives
// another ID is a fault here; a machine whose node or libraries differ builds another image,
// says which files differ, and leaves the pin alone unless asked to re-pin (--pin).
//
//   node scripts/build-verifier-image.mjs          build and load it; exit 1 when it is not the pinned image
//   node scripts/build-verifier-image.mjs --check  exit 1 unless the pinned image is loaded (builds nothing)
//   node scripts/build-verifier-image.mjs --rebuild  build it even when it is loaded: exit 1 unless the pinned ID comes out
//   node scripts/build-verifier-image.mjs --pin    build it and pin its ID in the cohort and the recipe file
//
// Needs: docker (a running engine), ldd, GNU tar.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const RECIPE_FILE = join(ROOT, 'examples', 'cohorts', 'fixtures', 'verifier-image.json');
const COHORT = join(ROOT, 'cohorts', 'primer-context-file.yaml');
const EPOCH = '1970-01-01T00:00:00Z';
const PASSWD = 'root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n';
const GROUP = 'root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n';

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });

/** The host files the image holds: where each goes, and its bytes' digest. */
function hostFiles() {
  const which = (cmd) => realpathSync(run('sh', ['-c', `command -v ${cmd}`]).trim());
  // Only what the base system brings (dash, coreutils' sleep, node and their libraries): no
  // package a CI machine installs at its start, whose version could move between machines.
  const programs = [
    { target: '/bin/sh', source: which('sh') },
    { target: '/bin/sleep', source: which('sleep') },
    { target: '/usr/bin/node', source: which('node') },
  ];
  const libs = new Map();
  for (const p of programs)
    for (const line of run('ldd', [p.source]).split('\n')) {
      const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
      if (m) libs.set(m[1], { target: m[1], source: realpathSync(m[1]) });
    }
  return [...programs, ...libs.values()].map((f) => ({ ...f, sha256: sha256(readFileSync(f.source)) })).sort((a, b) => a.target.localeCompare(b.target));
}

/** Stages the tree and packs it as one normalised layer; the layer's bytes. */
function layer(files) {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-verifier-image-'));
  try {
    const root = join(dir, 'root');
    const mkdir = (p, mode = 0o755) => {
      mkdirSync(join(root, p), { recursive: true });
      chmodSync(join(root, p), mode);
    };
    for (const d of ['bin', 'usr/bin', 'etc', 'work', 'proc', 'sys', 'dev', 'root']) mkdir(d);
    mkdir('tmp', 0o1777);
    for (const f of files) {
      mkdir(dirname(f.target).slice(1));
      copyFileSync(f.source, join(root, f.target));
      chmodSync(join(root, f.target), 0o755);
    }
    writeFileSync(join(root, 'etc/passwd'), PASSWD, { mode: 0o644 });
    writeFileSync(join(root, 'etc/group'), GROUP, { mode: 0o644 });
    chmodSync(join(root, 'etc/passwd'), 0o644);
    chmodSync(join(root, 'etc/group'), 0o644);
    const tar = join(dir, 'layer.tar');
    run('tar', ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '--format=gnu', '-C', root, '-cf', tar, '.']);
    return readFileSync(tar);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The image's config (its digest is the image ID) for a layer. */
function imageConfig(layerDigest) {
  return Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      config: { Env: ['PATH=/bin:/usr/bin'], WorkingDir: '/work' },
      created: EPOCH,
      history: [{ created: EPOCH, created_by: 'pairbench scripts/build-verifier-image.mjs' }],
      os: 'linux',
      rootfs: { type: 'layers', diff_ids: [`sha256:${layerDigest}`] },
    }),
  );
}

const loaded = (id) => {
  try {
    return run('docker', ['image', 'inspect', '--format', '{{.Id}}', id]).trim() === id;
  } catch {
    return false;
  }
};

/** Builds the image (loading it when the engine lacks it); its ID and what it was built from. */
export function buildVerifierImage() {
  const files = hostFiles();
  const bytes = layer(files);
  const layerDigest = sha256(bytes);
  const config = imageConfig(layerDigest);
  const configDigest = sha256(config);
  const id = `sha256:${configDigest}`;
  if (!loaded(id)) {
    const dir = mkdtempSync(join(tmpdir(), 'pairbench-verifier-archive-'));
    try {
      mkdirSync(join(dir, layerDigest));
      writeFileSync(join(dir, layerDigest, 'layer.tar'), bytes);
      writeFileSync(join(dir, `${configDigest}.json`), config);
      const tag = `pairbench-verifier:${configDigest.slice(0, 12)}`;
      writeFileSync(join(dir, 'manifest.json'), JSON.stringify([{ Config: `${configDigest}.json`, RepoTags: [tag], Layers: [`${layerDigest}/layer.tar`] }]));
      run('tar', ['-C', dir, '-cf', join(dir, 'image.tar'), 'manifest.json', `${configDigest}.json`, `${layerDigest}/layer.tar`]);
      run('docker', ['load', '-i', join(dir, 'image.tar')]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    if (!loaded(id)) throw new Error(`docker load did not give image ${id} (is the engine's image store content-addressed by config, as docker's own is?)`);
  }
  return { id, files: files.map(({ target, sha256: digest }) => ({ target, sha256: digest })) };
}

function readPin() {
  return JSON.parse(readFileSync(RECIPE_FILE, 'utf8'));
}

function pin(built) {
  const recipe = {
    $comment: 'The verifier image cohorts/primer-context-file.yaml pins, and the host files it was built from (scripts/build-verifier-image.mjs).',
    id: built.id,
    files: built.files,
  };
  writeFileSync(RECIPE_FILE, JSON.stringify(recipe, null, 2) + '\n');
  const text = readFileSync(COHORT, 'utf8');
  const next = text.replace(/image: sha256:[0-9a-f]{64}/g, `image: ${built.id}`);
  if (!/image: sha256:[0-9a-f]{64}/.test(text)) throw new Error(`${COHORT} pins no image (image: sha256:...)`);
  writeFileSync(COHORT, next);
}

/**
 * The pinned image, loaded (`check`: only looked for, never built): ok with what happened, or
 * not ok with what to do. No engine is not ok either: the cohort cannot verify without one.
 */
export function ensureVerifierImage({ check = false, rebuild = false } = {}) {
  const recipe = readPin();
  try {
    run('docker', ['info', '--format', '{{.ID}}']);
  } catch {
    return {
      ok: false,
      message: `verifier image ${recipe.id}: no docker engine answers (start one: scripts/start-dockerd.sh); cohorts/primer-context-file.yaml verifies in it`,
    };
  }
  // An image of that ID is the pinned content (the ID is its config's digest, the config names its layer's).
  if (loaded(recipe.id) && !rebuild) return { ok: true, message: `verifier image ${recipe.id}: loaded` };
  if (check) return { ok: false, message: `verifier image ${recipe.id}: missing or stale` };
  const built = buildVerifierImage();
  if (built.id === recipe.id) return { ok: true, message: `verifier image ${built.id}: the pinned one` };
  const was = new Map(recipe.files.map((f) => [f.target, f.sha256]));
  const differ = built.files.filter((f) => was.get(f.target) !== f.sha256).map((f) => f.target);
  const gone = recipe.files.filter((f) => !built.files.some((b) => b.target === f.target)).map((f) => `${f.target} (not here)`);
  if (differ.length === 0 && gone.length === 0)
    return {
      ok: false,
      message: `the verifier image built from the pinned recipe's very files is ${built.id}, not the pinned ${recipe.id}: the build is not reproducible (GNU tar's format?), a fault to report`,
    };
  return {
    ok: false,
    message:
      `built verifier image ${built.id}; cohorts/primer-context-file.yaml pins ${recipe.id}, built from other host files (${[...differ, ...gone].join(', ')}). ` +
      'This machine builds another image: pin it with node scripts/build-verifier-image.mjs --pin (a new pin changes every verify key: bump the cohort version when it has run).',
  };
}

function main(argv) {
  if (argv.includes('--pin')) {
    const built = buildVerifierImage();
    pin(built);
    console.log(`pinned ${built.id} in cohorts/primer-context-file.yaml`);
    return 0;
  }
  const r = ensureVerifierImage({ check: argv.includes('--check'), rebuild: argv.includes('--rebuild') });
  if (!r.ok) console.error(r.message);
  else if (!argv.includes('--quiet')) console.log(r.message);
  return r.ok ? 0 : 1;
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
