/**
 * Every occurrence of many patterns in one pass over a text (Aho-Corasick): certify looks for
 * each of a solution's lines in every file of a tree, and one `indexOf` per line per file was
 * the scan's cost (a 150-line stub over tape's 4,300 vendored files took 17 s). Patterns are
 * matched as UTF-16 code units, exactly as `indexOf` matches them; ASCII transitions live in a
 * dense table, others in a map per state.
 */
export class MultiSearch {
  private readonly ascii: Int32Array;
  private readonly other: Map<number, number>[] = [];
  private readonly fail: Int32Array;
  /** Per state, the patterns (by index) that end there, through the suffix links too. */
  private readonly out: number[][] = [];
  readonly lengths: readonly number[];

  constructor(patterns: readonly string[]) {
    this.lengths = patterns.map((p) => p.length);
    // The trie, built with growable arrays, then frozen into typed ones.
    const asciiRows: Int32Array[] = [];
    const newState = () => {
      asciiRows.push(new Int32Array(128).fill(-1));
      this.other.push(new Map());
      this.out.push([]);
      return asciiRows.length - 1;
    };
    newState();
    const child = (s: number, c: number) => (c < 128 ? asciiRows[s]![c]! : (this.other[s]!.get(c) ?? -1));
    patterns.forEach((p, index) => {
      if (!p.length) return;
      let s = 0;
      for (let i = 0; i < p.length; i++) {
        const c = p.charCodeAt(i);
        let next = child(s, c);
        if (next < 0) {
          next = newState();
          if (c < 128) asciiRows[s]![c] = next;
          else this.other[s]!.set(c, next);
        }
        s = next;
      }
      this.out[s]!.push(index);
    });
    const n = asciiRows.length;
    this.ascii = new Int32Array(n * 128);
    asciiRows.forEach((row, s) => this.ascii.set(row, s * 128));
    this.fail = new Int32Array(n);
    // Breadth first: a state's failure link is the longest proper suffix that is also a trie path.
    const queue: number[] = [];
    const edges = (s: number): [number, number][] => {
      const e: [number, number][] = [];
      for (let c = 0; c < 128; c++) if (this.ascii[s * 128 + c]! >= 0) e.push([c, this.ascii[s * 128 + c]!]);
      for (const [c, t] of this.other[s]!) e.push([c, t]);
      return e;
    };
    for (const [, t] of edges(0)) {
      this.fail[t] = 0;
      queue.push(t);
    }
    for (let head = 0; head < queue.length; head++) {
      const s = queue[head]!;
      for (const [c, t] of edges(s)) {
        let f = this.fail[s]!;
        while (f > 0 && this.step(f, c) < 0) f = this.fail[f]!;
        const via = this.step(f, c);
        this.fail[t] = via >= 0 && via !== t ? via : 0;
        this.out[t]!.push(...this.out[this.fail[t]!]!);
        queue.push(t);
      }
    }
  }

  private step(s: number, c: number): number {
    return c < 128 ? this.ascii[s * 128 + c]! : (this.other[s]!.get(c) ?? -1);
  }

  /** Calls `found(pattern, start)` for every occurrence, overlapping ones included. */
  search(text: string, found: (pattern: number, start: number) => void): void {
    let s = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      let next = this.step(s, c);
      while (next < 0 && s > 0) {
        s = this.fail[s]!;
        next = this.step(s, c);
      }
      s = next < 0 ? 0 : next;
      const ends = this.out[s]!;
      for (let k = 0; k < ends.length; k++) found(ends[k]!, i - this.lengths[ends[k]!]! + 1);
    }
  }
}
