import { main } from '../cli/main.js';

/** pairbench in this process, as the command line runs it (CI set, only PATH from the environment), with what it printed. */
export async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { PATH: process.env['PATH'], CI: '1' },
  });
  return { code, stdout, stderr };
}
