/**
 * `pairbench COMMAND ...`: parses the command line against the command's own declaration
 * (cli/commands/), prints its help, loads the config for the commands that read one, and hands
 * over. What each command does is in its own file.
 */
import { DEFAULT_CONFIG_FILE } from '../pipeline/config/load.js';
import { closest } from '../pipeline/diagnostic.js';
import { errorMessage } from '../pipeline/result.js';
import type { HeldLock } from '../pipeline/store/lock.js';
import { RecordKeyError } from '../pipeline/store/record-key.js';
import { CorruptBlobError } from '../pipeline/store/cas.js';
import { EXIT, fail, usageError, type Invocation } from './command.js';
import type { CliIO } from './command-context.js';
import { COMMAND_NAMES, parseCommandLine } from './command-line.js';
import { COMMANDS, isCommandName } from './commands/index.js';
import { helpFor, mainHelp, operandProblem } from './help.js';
import { printJsonErrors } from './json-output.js';
import { optionValueProblem } from './options.js';
import { loadProject } from './project.js';

export async function main(argv: string[], io: CliIO): Promise<number> {
  const held: HeldLock[] = [];
  try {
    return await runCommand(argv, io, held);
  } catch (e) {
    // Whatever went wrong is said in words, never as a stack trace (PAIRBENCH_DEBUG=1 adds it).
    const hint =
      e instanceof CorruptBlobError
        ? "a blob the store needs is missing or damaged: 'pairbench fsck --repair' drops what needs it, and the next run rebuilds it"
        : e instanceof RecordKeyError
          ? 'the record key signs the registry of every store this machine writes: point PAIRBENCH_RECORD_KEY at an Ed25519 private key (openssl genpkey -algorithm ed25519 -out key.pem), or unset it to use ~/.config/pairbench/record-key.pem'
          : 'this is a fault in pairbench itself: please report it, with the command and PAIRBENCH_DEBUG=1 output';
    if (argv.includes('--json')) printJsonErrors(io.stdout, [{ message: errorMessage(e), hint }]);
    else io.stderr.write(`pairbench: ${errorMessage(e)}\n${hint}\n${io.env['PAIRBENCH_DEBUG'] === '1' && e instanceof Error ? `${e.stack}\n` : ''}`);
    return EXIT.nodeFailed;
  } finally {
    for (const h of held) h.release();
  }
}

async function runCommand(argv: string[], io: CliIO, held: HeldLock[]): Promise<number> {
  const [first, ...rest] = argv;
  if (!first || first === '--help' || first === '-h' || first === 'help') {
    io.stdout.write(mainHelp() + '\n');
    return first ? EXIT.ok : EXIT.usage;
  }
  if (first === '--version' || first === '-V') {
    const { packageVersion } = await import('../pipeline/package-root.js');
    io.stdout.write(packageVersion() + '\n');
    return EXIT.ok;
  }
  const wantsJson = rest.includes('--json');
  if (!isCommandName(first)) {
    const guess = closest(first, COMMAND_NAMES);
    return usageError(io, wantsJson, null, `unknown command "${first}"${guess ? `; did you mean "${guess}"?` : ''}`);
  }
  const line = parseCommandLine(first, rest);
  if (!line.ok) return usageError(io, wantsJson, first, line.error);
  const { values, positionals } = line.value;
  if (values.help) {
    io.stdout.write(helpFor(first) + '\n');
    return EXIT.ok;
  }
  const command = COMMANDS[first];
  const problem = operandProblem(first, positionals) ?? command.check?.(values) ?? optionValueProblem(values);
  if (problem) return usageError(io, wantsJson, first, problem);
  const inv: Invocation = { io, json: Boolean(values.json), values, operands: positionals };
  if (!command.config) return command.run(inv);
  const standalone = command.withoutProject?.(inv);
  if (standalone) return standalone;
  const loaded = await loadProject(values.config ?? DEFAULT_CONFIG_FILE, values.store, io.env);
  if (!loaded.ok) return fail(io, inv.json, loaded.error);
  const { ctx, config } = loaded.value;
  if (command.usesStore)
    held.push(
      await ctx.store.use.enter(`pairbench ${first} --config ${config.configFile}`, (holder) =>
        io.stderr.write(`pairbench: waiting for gc to finish with the store (${holder})\n`),
      ),
    );
  return command.run({ ...inv, project: loaded.value });
}
