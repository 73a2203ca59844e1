/** A commit's tree written out as files: `git archive | tar -x`, streamed (no size limit, nothing buffered). */
import { spawn } from 'node:child_process';

export async function extractTree(mirror: string, treeish: string, dest: string): Promise<void> {
  const git = spawn('git', ['-C', mirror, 'archive', '--format=tar', treeish], { stdio: ['ignore', 'pipe', 'pipe'] });
  // tar reads git's pipe itself (an OS pipe between the two, as a shell makes): no byte passes through Node.
  const tar = spawn('tar', ['-x', '-C', dest, '-f', '-'], { stdio: [git.stdout, 'ignore', 'pipe'] });
  // This process's end is closed, so git gets SIGPIPE if tar stops reading.
  git.stdout.destroy();
  const tail = (chunks: Buffer[]) => Buffer.concat(chunks).toString('utf8').trim().split('\n').slice(-3).join('; ');
  const errOf = (p: typeof git | typeof tar) => {
    const chunks: Buffer[] = [];
    p.stderr!.on('data', (d: Buffer) => chunks.length < 64 && chunks.push(d));
    return chunks;
  };
  const gitErr = errOf(git);
  const tarErr = errOf(tar);
  const exit = (p: typeof git | typeof tar) =>
    new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
      (resolve, reject) => (p.once('error', reject), p.once('close', (code, signal) => resolve({ code, signal }))),
    );
  const [g, t] = await Promise.all([exit(git), exit(tar)]);
  // git stopped because its reader went away (SIGPIPE, or a write error): tar's failure is the cause.
  const readerGone = g.signal === 'SIGPIPE' || /write error|broken pipe/i.test(tail(gitErr));
  if (g.code !== 0 && !(readerGone && t.code !== 0)) throw new Error(`git archive ${treeish} exited ${g.code ?? g.signal}: ${tail(gitErr)}`);
  if (t.code !== 0) throw new Error(`tar -x exited ${t.code ?? t.signal}: ${tail(tarErr)}`);
}
