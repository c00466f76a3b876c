/** The commands that only talk to an API over HTTP, in help order: the packaged CLI's whole list (bin/client-cli.ts). */
import type { CommandModule } from './context.ts';
import { controlsCommand } from './controls.ts';
import { eventsCommand } from './events.ts';
import { forkCommand } from './fork.ts';
import { leaseCommand } from './lease.ts';
import { registryCommand } from './registry.ts';
import { runsCommand } from './runs.ts';
import { functionsCommand, toolsCommand } from './tools.ts';

export const ALL_HTTP_COMMANDS: readonly CommandModule[] = [
  runsCommand,
  forkCommand,
  eventsCommand,
  leaseCommand,
  controlsCommand,
  toolsCommand,
  functionsCommand,
  registryCommand,
];
