#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { SimrecError } from '../model/errors.js';
import { registerBirdviewCommand } from './commands/birdview-command.js';
import { registerCatalogCommands } from './commands/catalog-commands.js';
import { registerCheckCommand } from './commands/check-command.js';
import { registerConvertCommands } from './commands/convert-commands.js';
import { registerDemoCommand } from './commands/demo-command.js';
import { registerEvalCommand } from './commands/eval-command.js';
import { registerPerceptionCommands } from './commands/perception-commands.js';
import { registerQueryCommands } from './commands/query-commands.js';
import { registerRecordCommand } from './commands/record-command.js';
import { registerRoadnetCommand } from './commands/roadnet-command.js';
import { registerServeCommand } from './commands/serve-command.js';
import { registerSodaCommands } from './commands/soda-commands.js';

const program = new Command('simrec')
  .description('record, store, query, replay, score and convert driving-simulation runs')
  .version('0.1.0')
  .option('--store <location>', 'store file or URL (default: $SIMREC_STORE or ./simrec.db)')
  .showHelpAfterError()
  .exitOverride();

registerQueryCommands(program);
registerCatalogCommands(program);
registerCheckCommand(program);
registerDemoCommand(program);
registerEvalCommand(program);
registerRoadnetCommand(program);
registerPerceptionCommands(program);
registerServeCommand(program);
registerSodaCommands(program);
registerRecordCommand(program);
registerConvertCommands(program);
registerBirdviewCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Commander has printed its own message (or the help); only the exit code is left to set.
    process.exitCode = error.exitCode;
  } else if (error instanceof SimrecError) {
    process.stderr.write(`simrec: ${error.message}\n`);
    process.exitCode = error.code === 'invalid' || error.code === 'not_found' ? 2 : 1;
  } else {
    process.stderr.write(`simrec: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  }
}
