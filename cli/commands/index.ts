/**
 * Every command, in the order `pairbench --help` lists them. Adding one is its file in this
 * folder and its line here: the parser, its --help and the dispatch follow from it.
 */
import type { Command } from '../command.js';
import { checkCommand } from './check.js';
import { compareCommand } from './compare.js';
import { doctorCommand } from './doctor.js';
import { explainCommand } from './explain.js';
import { exportCommand } from './export.js';
import { freezeCommand } from './freeze.js';
import { fsckCommand } from './fsck.js';
import { gcCommand } from './gc.js';
import { generateCommand } from './generate.js';
import { historyCommand } from './history.js';
import { initCommand } from './init.js';
import { planCommand } from './plan.js';
import { probeCommand } from './probe.js';
import { reviewCommand } from './review.js';
import { runCommand } from './run.js';
import { showCommand } from './show.js';
import { sizeCommand } from './size.js';
import { statusCommand } from './status.js';
import { verifyBundleCommand } from './verify-bundle.js';
import { viewCommand } from './view.js';
import { workerCommand } from './worker.js';

const ALL = [
  initCommand,
  runCommand,
  planCommand,
  explainCommand,
  showCommand,
  statusCommand,
  gcCommand,
  fsckCommand,
  doctorCommand,
  probeCommand,
  sizeCommand,
  freezeCommand,
  historyCommand,
  exportCommand,
  verifyBundleCommand,
  compareCommand,
  reviewCommand,
  checkCommand,
  generateCommand,
  workerCommand,
  viewCommand,
] as const;

export type CommandName = (typeof ALL)[number]['name'];

/** The commands by name. */
export const COMMANDS = Object.fromEntries(ALL.map((c) => [c.name, c])) as { readonly [N in CommandName]: Command<N> };

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name);
}
