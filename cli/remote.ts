/** The remote cache tier a run uses: `cache:` in the config, overridden by --remote-cache / --cache-mode. */
import type { BenchConfig } from '../pipeline/config/load.js';
import { err, ok, type Result } from '../pipeline/result.js';
import { parseKeys, RemoteCache } from '../pipeline/store/remote-cache.js';

/** Where the signing keys are read from when the config names no variable. */
export const DEFAULT_KEY_ENV = 'PAIRBENCH_CACHE_KEYS';

export function remoteCacheFor(
  config: BenchConfig,
  flags: { url?: string | undefined; mode?: string | undefined },
  env: Record<string, string | undefined>,
  warn: (message: string) => void,
): Result<RemoteCache, string> | undefined {
  const url = flags.url ?? config.cache?.remote;
  if (!url) return flags.mode ? err('--cache-mode needs a remote cache: set cache.remote in the config or give --remote-cache URL') : undefined;
  if (!/^https?:\/\//.test(url) || !URL.canParse(url)) return err(`remote cache "${url}" is not an http(s) URL`);
  const mode = flags.mode ?? config.cache?.mode ?? 'read-write';
  if (mode !== 'read-write' && mode !== 'read-only') return err(`--cache-mode is read-write or read-only, not "${mode}"`);
  const keyEnv = config.cache?.key_env ?? DEFAULT_KEY_ENV;
  const keys = parseKeys(keyEnv ? env[keyEnv] : undefined);
  if (keyEnv && env[keyEnv] && !keys.length) return err(`${keyEnv} (cache.key_env) holds no key: write id:secret[,id:secret...]`);
  if (!keys.length) warn(`remote cache ${url}: no signing key (${keyEnv}, cache.key_env, is unset): nothing is uploaded, and no remote record is trusted`);
  const authEnv = config.cache?.auth_env;
  if (authEnv && !env[authEnv]) warn(`remote cache ${url}: ${authEnv} (cache.auth_env) is unset: requests go without credentials`);
  return ok(
    new RemoteCache({
      url,
      mode,
      keys,
      ...(authEnv && env[authEnv] ? { authorization: env[authEnv] } : {}),
      warn,
    }),
  );
}
