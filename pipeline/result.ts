/** Expected failures are values; exceptions are turned into values at the edges. */
export type Result<T, E> = { ok: true; value: T } | { ok: false; error: E };

export function ok<T>(value: T): { ok: true; value: T } {
  return { ok: true, value };
}

export function err<E>(error: E): { ok: false; error: E } {
  return { ok: false, error };
}

/** Makes a switch over a union exhaustive: a new member fails to compile. */
export function unreachable(value: never): never {
  throw new Error(`unreachable: ${JSON.stringify(value)}`);
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
