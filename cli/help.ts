/**
 * Every --help, made from the commands' own declarations (cli/commands/) and the option table
 * (options.ts): what a command accepts is what its help lists.
 */
import type { Command, OptionDoc } from './command.js';
import { COMMANDS, type CommandName } from './commands/index.js';
import { OPTIONS, type OptionName } from './options.js';

const COMMON: readonly OptionDoc[] = [
  ['config', 'FILE', 'the config (default: bench.config.yaml in the current directory)'],
  ['store', 'DIR', 'the store directory (default: store.path in the config, or .pairbench)'],
  ['json', null, 'machine-readable output on stdout (errors too: {schema_version, ok: false, errors})'],
  ['help', null, 'this help'],
];

/** The options `command` accepts: its own, and --config, --store, --json and --help. */
export function optionsOf(command: CommandName): OptionName[] {
  const doc: Command = COMMANDS[command];
  const always: OptionName[] = doc.config ? COMMON.map(([name]) => name) : ['json', 'help'];
  return [...new Set([...always, ...doc.options.map(([name]) => name)])];
}

/** What is wrong with `operands` for `command`, if anything. */
export function operandProblem(command: CommandName, operands: readonly string[]): string | undefined {
  const expected = (COMMANDS[command] as Command).operands;
  if (!expected) return operands.length ? `"${command}" takes no arguments` : undefined;
  return operands.length < expected.min || operands.length > expected.max ? expected.message : undefined;
}

/** `-j, --jobs N`: how an option is written in help. */
function flagsOf([name, value]: OptionDoc): string {
  const option: { value: boolean; short?: string } = OPTIONS[name];
  return `${option.short ? `-${option.short}, ` : '    '}--${name}${value ? ` ${value}` : ''}`;
}

/** Options as a two-column block: flags, then the help (its later lines under its first; under the flags when they are long). */
function optionBlock(docs: readonly OptionDoc[], width = 24): string {
  const indent = ' '.repeat(width + 2);
  return docs
    .map((d) => {
      const flags = flagsOf(d);
      const lines = d[2].split('\n');
      const head = flags.length + 2 <= width ? [`  ${flags.padEnd(width)}${lines.shift()}`] : [`  ${flags}`];
      return [...head, ...lines.map((l) => indent + l)].join('\n');
    })
    .join('\n');
}

const COMMON_BLOCK = `Options for every command:\n${optionBlock(COMMON)}`;

/** The commands that read no config (they take only --json and --help of the common options). */
const configless = (): string[] => Object.values(COMMANDS).flatMap((doc: Command) => (doc.config ? [] : [doc.name]));

/** `pairbench COMMAND --help`. */
export function helpFor(command: CommandName): string {
  const doc: Command = COMMANDS[command];
  const parts = [`Usage: ${doc.usage}`, doc.about];
  if (doc.options.length) parts.push(`Options:\n${optionBlock(doc.options)}`);
  if (doc.config) parts.push(COMMON_BLOCK);
  parts.push(`Exit codes: ${doc.exits}`);
  return parts.join('\n\n');
}

/** `pairbench --help`. */
export function mainHelp(): string {
  const docs: Command[] = Object.values(COMMANDS);
  const width = Math.max(...docs.map((d) => d.synopsis.length)) + 1;
  return `pairbench: paired, content-addressed evaluation of context for coding agents

Usage: pairbench <command> [options]

Commands:
${docs.map((d) => `  ${d.synopsis.padEnd(width)}${d.summary}`).join('\n')}

Run 'pairbench <command> --help' for a command's options, and its exit codes.

  -V, --version       the version of pairbench

Options for every command but ${configless().join(', ')} (they read no config, and take --json and --help):
${optionBlock(COMMON)}`;
}
