/**
 * The simrec command's commands, by the module that defines them. A command line loads the one module
 * that defines the command it names: each module brings its own imports, and Node.js loads a module at a
 * cost that adds up over the whole program (performance-history.md, "A command's start"). Help, an
 * unknown command or anything this cannot read loads them all, so that commander lists every command or
 * says which one was meant.
 */
import type { Command } from 'commander';

type Register = (program: Command) => void;

/** Each group of commands, in the order the help lists them. */
const GROUPS: { commands: readonly string[]; load: () => Promise<Register> }[] = [
  {
    commands: ['ls', 'info', 'scene', 'traj', 'samples'],
    load: async () => (await import('./commands/query-commands.js')).registerQueryCommands,
  },
  {
    commands: ['scenarios', 'vehicles'],
    load: async () => (await import('./commands/catalog-commands.js')).registerCatalogCommands,
  },
  {
    commands: ['check'],
    load: async () => (await import('./commands/check-command.js')).registerCheckCommand,
  },
  { commands: ['demo'], load: async () => (await import('./commands/demo-command.js')).registerDemoCommand },
  { commands: ['eval'], load: async () => (await import('./commands/eval-command.js')).registerEvalCommand },
  {
    commands: ['roadnet'],
    load: async () => (await import('./commands/roadnet-command.js')).registerRoadnetCommand,
  },
  {
    commands: ['stats'],
    load: async () => (await import('./commands/stats-command.js')).registerStatsCommand,
  },
  {
    commands: ['serve'],
    load: async () => (await import('./commands/serve-command.js')).registerServeCommand,
  },
  {
    commands: ['record'],
    load: async () => (await import('./commands/record-command.js')).registerRecordCommand,
  },
  {
    commands: ['import', 'export'],
    load: async () => (await import('./commands/convert-commands.js')).registerConvertCommands,
  },
  {
    commands: ['birdview'],
    load: async () => (await import('./commands/birdview-command.js')).registerBirdviewCommand,
  },
  { commands: ['sql'], load: async () => (await import('./commands/sql-command.js')).registerSqlCommand },
  {
    commands: ['tables'],
    load: async () => (await import('./commands/tables-command.js')).registerTablesCommand,
  },
  { commands: ['rm'], load: async () => (await import('./commands/rm-command.js')).registerRmCommand },
  { commands: ['diff'], load: async () => (await import('./commands/diff-command.js')).registerDiffCommand },
  {
    commands: ['perception', 'solo', 'coco', 'yolo', 'soda'],
    load: async () => (await import('./commands/stats-command.js')).registerMovedCommands,
  },
];

/** Every command name the groups define (the tests check it against what they register). */
export const COMMAND_NAMES: readonly string[] = GROUPS.flatMap((g) => g.commands);

/**
 * Adds to `program` the commands `argv` can need: the group of the command it names, or every group.
 * `program` has its own options already (they tell a global option's value from a command's name).
 */
export async function registerCommands(program: Command, argv: readonly string[]): Promise<void> {
  const named = commandNamed(program, argv);
  const groups = GROUPS.filter((g) => named === undefined || g.commands.includes(named));
  const registers = await Promise.all((groups.length ? groups : GROUPS).map((g) => g.load()));
  for (const register of registers) register(program);
}

/**
 * The command `argv` (node, script, then the user's words) names: its first word that is neither one
 * of the program's own options nor an option's value. Undefined for none, for an option the program
 * does not have, and for `help`: then every command is wanted.
 */
export function commandNamed(program: Command, argv: readonly string[]): string | undefined {
  const takesValue = new Set(
    program.options.filter((o) => o.required || o.optional).flatMap((o) => [o.long, o.short]),
  );
  const flags = new Set(program.options.flatMap((o) => [o.long, o.short]));
  for (let i = 2; i < argv.length; i++) {
    const word = argv[i]!;
    if (!word.startsWith('-')) return word === 'help' ? undefined : word;
    const [name, value] = word.split('=', 2);
    if (!flags.has(name)) return undefined;
    if (takesValue.has(name) && value === undefined) i++;
  }
  return undefined;
}
