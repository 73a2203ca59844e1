/**
 * The docker backend's stamp for a memo of the plan (pipeline/memo/stamps.ts): a key holds image
 * IDs the engine gave for names (docker-client.ts stampedImageIds), so a replayed plan asks the
 * engine again. This asks with one read-only request per name on the engine's socket
 * (GET /images/NAME/json) instead of through dockerode: the replay answers before any of
 * pairbench loads, and dockerode alone takes longer to load than a whole replay.
 */
import { lazyRequire } from '../pipeline/lazy-require.js';

// Loaded when a stamp is asked, not with the memo at every start (~3 ms).
const http = lazyRequire<typeof import('node:http')>('node:http');

export const DOCKER_IMAGES_STAMP = 'docker-images';

/** What the stamp asks: the engine's unix socket and the image names. */
export interface DockerImagesQuestion {
  socket: string;
  names: string[];
}

/** How long a name's lookup waits for the engine at replay: past it, the memo misses. */
const ASK_TIMEOUT_MS = 5000;

/** The answer: each name's image ID, or null for a name the engine lacks. */
export function dockerImagesAnswer(names: readonly string[], ids: ReadonlyMap<string, string>): string {
  return JSON.stringify(names.map((n) => ids.get(n) ?? null));
}

export async function askDockerImages(question: unknown): Promise<string> {
  const { socket, names } = question as DockerImagesQuestion;
  if (typeof socket !== 'string' || !Array.isArray(names) || !names.every((n) => typeof n === 'string')) throw new Error('a malformed question');
  const ids = new Map<string, string>();
  await Promise.all(
    names.map(async (name) => {
      const id = await imageId(socket, name);
      if (id !== null) ids.set(name, id);
    }),
  );
  return dockerImagesAnswer(names, ids);
}

/** The engine's Id for an image name, or null when it has no such image. */
function imageId(socket: string, name: string): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const req = http().request({ socketPath: socket, path: `/images/${encodeURIComponent(name)}/json`, timeout: ASK_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        if (res.statusCode === 404) return resolve(null);
        if (res.statusCode !== 200) return reject(new Error(`the engine answered ${res.statusCode}`));
        try {
          const id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { Id?: unknown }).Id;
          resolve(typeof id === 'string' ? id : null);
        } catch (e) {
          reject(e as Error);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('the engine did not answer in time')));
    req.on('error', reject);
    req.end();
  });
}
