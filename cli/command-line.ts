import { Command, CommanderError, Option } from 'commander';
import { closest } from '../pipeline/diagnostic.js';
import { err, ok, type Result } from '../pipeline/result.js';
import { COMMANDS, type CommandName } from './commands/index.js';
import { optionsOf } from './help.js';
import { isOptionName, OPTIONS, type OptionName, type OptionValues } from './options.js';

export interface CommandLine {
  values: OptionValues;
  positionals: string[];
}

/** commander's name for an option's value (`max-size` -> `maxSize`). */
const attributeOf = (name: string): string => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** `command`'s parser: exactly the options its help documents; operands are checked by the caller. */
function parserFor(command: CommandName): Command {
  const parser = new Command(command)
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined, outputError: () => undefined })
    .helpOption(false) // --help is an option like the others: the caller prints the command's own help
    .allowExcessArguments(true)
    .argument('[operands...]');
  for (const name of optionsOf(command)) {
    const o: { value: boolean; short?: string } = OPTIONS[name];
    parser.addOption(new Option(`${o.short ? `-${o.short}, ` : ''}--${name}${o.value ? ' <value>' : ''}`));
  }
  return parser;
}

/** commander's errors in our words, with the option the user probably meant. */
function usageMessage(e: CommanderError, command: CommandName): string {
  const firstLine = e.message.split('\n')[0]!.replace(/^error: /, '');
  const allowed = optionsOf(command);
  if (e.code === 'commander.unknownOption') {
    const given = /'(-{1,2}[^']+)'/.exec(firstLine)?.[1] ?? '';
    const [flag, value] = given.split('=', 2) as [string, string | undefined];
    const name = flag.replace(/^-+/, '');
    if (value !== undefined && (allowed as string[]).includes(name)) return `option --${name} takes no value`;
    if (isOptionName(name)) return `option --${name} does not apply to "${command}"`;
    const guess = flag.startsWith('--') ? closest(name, allowed) : undefined;
    return `unknown option ${flag}${guess ? `; did you mean --${guess}?` : ''}`;
  }
  if (e.code === 'commander.optionMissingArgument') {
    const long = /--([a-z-]+)/.exec(firstLine)?.[1];
    return long ? `option --${long} needs a value` : firstLine;
  }
  return firstLine;
}

/** Whether `arg` is an option pairbench knows (`--json`, `--jobs=3`, `-j`). */
function isKnownOption(arg: string): boolean {
  if (arg.startsWith('--')) return isOptionName(arg.slice(2).split('=')[0]!);
  return arg.length === 2 && Object.values(OPTIONS).some((o: { value: boolean; short?: string }) => `-${o.short}` === arg);
}

/**
 * An option that takes a value followed by another option (`--jobs --json`): commander would
 * take `--json` as the value; the user forgot the value.
 */
function missingValue(args: readonly string[]): OptionName | undefined {
  for (let i = 0; i < args.length && args[i] !== '--'; i++) {
    const name = /^--([a-z-]+)$/.exec(args[i]!)?.[1];
    if (!name || !isOptionName(name) || !OPTIONS[name].value) continue;
    const next = args[i + 1];
    if (next === undefined || isKnownOption(next)) return name;
    i++;
  }
  return undefined;
}

/** Parses `args` (what follows the command) against the options `command` takes. */
export function parseCommandLine(command: CommandName, args: readonly string[]): Result<CommandLine, string> {
  const forgotten = missingValue(args);
  if (forgotten && optionsOf(command).includes(forgotten)) return err(`option --${forgotten} needs a value`);
  const parser = parserFor(command);
  try {
    parser.parse([...args], { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return err(usageMessage(e, command));
    throw e;
  }
  const parsed: Record<string, unknown> = parser.opts();
  const values: Partial<Record<OptionName, string | boolean>> = {};
  for (const name of optionsOf(command)) {
    const v = parsed[attributeOf(name)];
    // commander gives a string for an option declared with a value, true for a flag.
    if (typeof v === (OPTIONS[name].value ? 'string' : 'boolean')) values[name] = v as string | boolean;
  }
  return ok({ values: values as OptionValues, positionals: [...parser.args] });
}

export const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];
