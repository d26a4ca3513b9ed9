/** The simrec command's program: its commands, and how a failure is told (main.ts checks Node.js first). */
import { Command } from 'commander';
import { describeFailure, stopQuietlyWhenTheReaderLeaves } from './failure.js';
import { handleInterrupts, setKeptOnInterrupt } from './interrupt.js';
import { registerCommands } from './command-groups.js';

/** Commands that change nothing unless given an output (`--out`, `--attach`, `--repair`). */
const READERS = new Set([
  'ls',
  'info',
  'scene',
  'traj',
  'samples',
  'stats',
  'roadnet',
  'birdview',
  'check',
  'tables',
  'scenarios ls',
  'scenarios get',
  'vehicles ls',
  'vehicles get',
]);

/** What a command interrupted before it finished keeps, unless it says so itself. */
function keptWhenInterrupted(command: Command): string {
  const parent = command.parent?.parent ? `${command.parent.name()} ` : '';
  const opts = command.opts<{ out?: string; attach?: string; repair?: boolean }>();
  if (READERS.has(`${parent}${command.name()}`) && !opts.out && !opts.attach && !opts.repair)
    return 'nothing was changed';
  return 'what it had finished is kept; the store holds no half-written change (it commits whole or not at all)';
}

const program = new Command('simrec')
  .description('record, store, query, replay, score and convert driving-simulation runs')
  .version('0.1.0')
  .option('--store <location>', 'store file or URL (default: $SIMREC_STORE or ./simrec.db)')
  .option(
    '--tables <dir>',
    "the store's tables folder for SQL (default: $SIMREC_TABLES, or beside the store: runs.db -> runs.tables/)",
  )
  .option('--debug', 'print the stack trace of an error')
  .option('--verbose', 'list every warning (by default: a count per kind and the first of each)')
  .showHelpAfterError("(simrec help COMMAND shows the command's usage)")
  // The parser's own mistakes read as every other error does: `simrec: ` and what was wrong. Set
  // before the commands are added, so that each of them (and theirs) inherits it.
  .configureOutput({ outputError: (text, write) => write(`simrec: ${text.replace(/^error: /, '')}`) })
  .exitOverride();

await registerCommands(program, process.argv);

// An interrupted command says what it kept: by default that of its kind, or its own (interrupt.ts).
program.hook('preAction', (_program, command) => setKeptOnInterrupt(keptWhenInterrupted(command)));
handleInterrupts();
stopQuietlyWhenTheReaderLeaves();
try {
  await program.parseAsync(process.argv);
} catch (error) {
  const { message, exitCode } = describeFailure(error);
  if (message !== null) process.stderr.write(`simrec: ${message}\n`);
  // --debug may come anywhere on the line, and the parse may have failed before it was read.
  if (process.argv.includes('--debug') && error instanceof Error && message !== null)
    process.stderr.write(`${error.stack}\n`);
  process.exitCode = exitCode;
}
