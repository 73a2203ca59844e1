/**
 * What a command is: its documentation (synopsis, help text, the options it takes, its operands,
 * what its exit codes mean) and what it does. Each command is one file under cli/commands/ and
 * one line of cli/commands/index.ts; the parser (command-line.ts), every --help (help.ts) and
 * the dispatch (main.ts) are made from these, so an option cannot be accepted without being
 * documented, nor documented without being accepted.
 */
import { formatDiagnostic, type Diagnostic } from '../pipeline/diagnostic.js';
import type { CliIO, LoadedConfig } from './command-context.js';
import { printJsonErrors } from './json-output.js';
import type { OptionName, OptionValues } from './options.js';

export const EXIT = { ok: 0, nodeFailed: 1, usage: 2, gateFailed: 3, interrupted: 130 } as const;

/** One option as a command documents it: `[name, placeholder or null for a flag, help]` (help lines joined by \n). */
export type OptionDoc = readonly [OptionName, string | null, string];

/** What a command is handed: its streams, its parsed options and its operands. */
export interface Invocation {
  io: CliIO;
  json: boolean;
  values: OptionValues;
  operands: readonly string[];
}

/** What a command that reads the config is handed: the config loaded and planned too. */
export interface ProjectInvocation extends Invocation {
  project: LoadedConfig;
}

interface CommandDoc<N extends string> {
  name: N;
  /** After "pairbench " in the command list: the command and its arguments. */
  synopsis: string;
  /** One line in the command list. */
  summary: string;
  usage: string;
  about: string;
  options: readonly OptionDoc[];
  /** How many operands it takes, and what to say otherwise (absent: none). */
  operands?: { min: number; max: number; message: string };
  /** What each exit code means. */
  exits: string;
  /** What is wrong with the options given together (a required one missing), in words. */
  check?: (values: OptionValues) => string | undefined;
}

/** A command that reads no config: it takes --json and --help of the common options. */
export interface ConfiglessCommand<N extends string = string> extends CommandDoc<N> {
  config: false;
  run(inv: Invocation): Promise<number>;
}

/** A command that reads the config: it takes --config and --store too, and runs on the loaded project. */
export interface ProjectCommand<N extends string = string> extends CommandDoc<N> {
  config: true;
  /** Whether it reads and writes records: it is then live on the store while it runs, so gc waits for it. */
  usesStore: boolean;
  /**
   * Whether a memo may answer it (pipeline/memo/): what it prints is a function of what it reads,
   * and what it writes when nothing changed is declared (pipeline/hooks.ts); anything else
   * makes a run of it unmemoizable. Listed in MEMOIZED_COMMANDS too, which bin/ reads before any
   * command loads.
   */
  memo?: true;
  /** When these operands need no config (view BUNDLE_DIR), what runs instead; undefined: load the config. */
  withoutProject?: (inv: Invocation) => Promise<number> | undefined;
  run(inv: ProjectInvocation): Promise<number>;
}

export type Command<N extends string = string> = ConfiglessCommand<N> | ProjectCommand<N>;

/** Declares a command, keeping its name as a literal type (the registry's keys). */
export function defineCommand<const N extends string>(command: Command<N>): Command<N> {
  return command;
}

/** How every command that reads a config ends its exit codes. */
export const CONFIG_ERROR = '2 usage or config error';

/** Any number of operands (node ids, cohorts). */
export const ANY_OPERANDS = { min: 0, max: Infinity, message: '' };

/** The one error shape of every command: {schema_version, ok: false, errors: [{message, field?, location?, hint?}]}. */
export function fail(io: CliIO, json: boolean, diagnostics: Diagnostic[], code: number = EXIT.usage): number {
  if (json) printJsonErrors(io.stdout, diagnostics);
  else io.stderr.write(diagnostics.map(formatDiagnostic).join('\n\n') + '\n');
  return code;
}

/** A usage error in words, on stderr or as the JSON error shape; exit 2. */
export function usageError(io: CliIO, json: boolean, command: string | null, message: string): number {
  const hint = command ? `Run 'pairbench ${command} --help' for its options.` : "Run 'pairbench --help' for the commands.";
  if (json) printJsonErrors(io.stdout, [{ message, hint }]);
  else io.stderr.write(`pairbench${command ? ` ${command}` : ''}: ${message}\n${hint}\n`);
  return EXIT.usage;
}
