/** The remote cache tier a run uses: `cache:` in the config, overridden by --remote-cache / --cache-mode. */
import type { BenchConfig } from '../pipeline/config/load.js';
import type { OptionDoc } from './command.js';
import type { OptionValues } from './options.js';
import { err, ok, type Result } from '../pipeline/result.js';
import { parseKeys, RemoteCache } from '../pipeline/store/remote-cache.js';

/** Where the signing keys are read from when the config names no variable. */
export const DEFAULT_KEY_ENV = 'PAIRBENCH_CACHE_KEYS';

export interface RemoteFlags {
  url?: string | undefined;
  mode?: string | undefined;
  /**
   * --ignore-config-cache: the config's `cache:` is not read (a pull request wrote it: where
   * records go and which host variables are sent there are the workflow's to say). The remote
   * is --remote-cache's alone, its keys are PAIRBENCH_CACHE_KEYS, its credential the variable
   * --cache-auth-env names.
   */
  ignoreConfig?: boolean;
  /** --cache-auth-env: the host variable holding the Authorization header for --remote-cache. */
  authEnv?: string | undefined;
}

export function remoteCacheFor(
  config: BenchConfig,
  flags: RemoteFlags,
  env: Record<string, string | undefined>,
  warn: (message: string) => void,
): Result<RemoteCache, string> | undefined {
  const cache = flags.ignoreConfig ? undefined : config.cache;
  const url = flags.url ?? cache?.remote;
  if (!url) {
    if (flags.mode)
      return err(`--cache-mode needs a remote cache: ${flags.ignoreConfig ? 'give' : 'set cache.remote in the config or give'} --remote-cache URL`);
    return undefined;
  }
  if (!/^https?:\/\//.test(url) || !URL.canParse(url)) return err(`remote cache "${url}" is not an http(s) URL`);
  const mode = flags.mode ?? cache?.mode ?? 'read-write';
  if (mode !== 'read-write' && mode !== 'read-only') return err(`--cache-mode is read-write or read-only, not "${mode}"`);
  const keyEnv = cache?.key_env ?? DEFAULT_KEY_ENV;
  const keys = parseKeys(keyEnv ? env[keyEnv] : undefined);
  if (keyEnv && env[keyEnv] && !keys.length) return err(`${keyEnv} (cache.key_env) holds no key: write id:secret[,id:secret...]`);
  if (!keys.length) warn(`remote cache ${url}: no signing key (${keyEnv}, cache.key_env, is unset): nothing is uploaded, and no remote record is trusted`);
  // A credential goes only to the origin named with it: the config's auth_env is for the config's own remote.
  const sameOrigin = (a: string | undefined, b: string) => a !== undefined && URL.canParse(a) && new URL(a).origin === new URL(b).origin;
  const authEnv = flags.authEnv ?? (sameOrigin(cache?.remote, url) ? cache?.auth_env : undefined);
  if (authEnv && !env[authEnv])
    warn(`remote cache ${url}: ${authEnv} (${flags.authEnv ? '--cache-auth-env' : 'cache.auth_env'}) is unset: requests go without credentials`);
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

/** The options that keep a config from choosing where records and credentials go (every command with --remote-cache takes them). */
export const CONFIG_CACHE_OPTIONS: readonly OptionDoc[] = [
  [
    'ignore-config-cache',
    null,
    `do not read the config's cache: section (a pull request's job: the config is
the pull request's, so where records go and which host variables are sent
there are the workflow's to say): the remote cache is --remote-cache's
alone, its keys PAIRBENCH_CACHE_KEYS, its credential --cache-auth-env's`,
  ],
  ['cache-auth-env', 'NAME', "the host variable holding --remote-cache's Authorization header\n(sent to that origin only)"],
];

/** The remote flags as given on the command line. */
export function remoteFlags(values: OptionValues, mode: string | undefined): RemoteFlags {
  return { url: values['remote-cache'], mode, ignoreConfig: Boolean(values['ignore-config-cache']), authEnv: values['cache-auth-env'] };
}
