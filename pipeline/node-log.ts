import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

/**
 * What a node prints while it executes (its record keeps it; `explain` shows a failure's tail).
 * Held in memory, as most steps write a line or two: the file is made only when a step asks for
 * its path (a child process writing to it), and from then on every line goes to the file.
 */
export class NodeLog {
  private held: string[] = [];
  private onDisk = false;

  constructor(private readonly path: string) {}

  /** Appends text as it is (a line carries its own newline). */
  append(text: string): void {
    if (this.onDisk) appendFileSync(this.path, text);
    else this.held.push(text);
  }

  /** The log as a file, made now with what was held. */
  file(): string {
    if (!this.onDisk) {
      writeFileSync(this.path, this.held.join(''));
      this.onDisk = true;
      this.held = [];
    }
    return this.path;
  }

  bytes(): Buffer {
    if (!this.onDisk) return Buffer.from(this.held.join(''));
    try {
      return readFileSync(this.path);
    } catch {
      return Buffer.alloc(0);
    }
  }

  remove(): void {
    if (this.onDisk) rmSync(this.path, { force: true });
  }
}
