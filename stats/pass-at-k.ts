/** pass@k and pass^k from n attempts of which c passed (unbiased estimators, no factorials). */

/** pass@k = 1 - C(n-c, k) / C(n, k): the chance that at least one of k draws passes. */
export function passAtK(n: number, c: number, k: number): number {
  if (k < 1 || k > n) throw new RangeError(`pass@k needs 1 <= k <= n (k=${k}, n=${n})`);
  if (n - c < k) return 1;
  // C(n-c,k)/C(n,k) = prod_{i=n-c+1}^{n} (1 - k/i)
  let q = 1;
  for (let i = n - c + 1; i <= n; i++) q *= 1 - k / i;
  return 1 - q;
}

/** pass^k = C(c, k) / C(n, k): the chance that all of k draws pass. */
export function passHatK(n: number, c: number, k: number): number {
  if (k < 1 || k > n) throw new RangeError(`pass^k needs 1 <= k <= n (k=${k}, n=${n})`);
  if (c < k) return 0;
  let q = 1;
  for (let i = 0; i < k; i++) q *= (c - i) / (n - i);
  return q;
}
