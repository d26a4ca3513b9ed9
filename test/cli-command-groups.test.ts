import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Command } from 'commander';
import { COMMAND_NAMES, commandNamed, registerCommands } from '../src/cli/command-groups.js';

/** A program with simrec's own options, as program.ts makes it, without its commands. */
function bareProgram(): Command {
  return new Command('simrec')
    .option('--store <location>')
    .option('--tables <dir>')
    .option('--debug')
    .option('--verbose')
    .exitOverride();
}

const names = (program: Command): string[] => program.commands.map((c) => c.name()).sort();

describe('the command line loads the module of the command it names', () => {
  it('every command is in the table, under the group that registers it', async () => {
    const all = bareProgram();
    await registerCommands(all, ['node', 'simrec']);
    assert.deepEqual(names(all), [...COMMAND_NAMES].sort(), 'all groups register what the table lists');
    for (const name of COMMAND_NAMES) {
      const one = bareProgram();
      await registerCommands(one, ['node', 'simrec', name]);
      assert.ok(names(one).includes(name), `${name} is registered by its own group`);
      assert.ok(names(one).length < COMMAND_NAMES.length, `${name}: only its group is loaded`);
    }
  });

  it("finds the command's name past the program's own options and their values", () => {
    const program = bareProgram();
    const named = (...words: string[]): string | undefined =>
      commandNamed(program, ['node', 'simrec', ...words]);
    assert.equal(named('scene', '1', '--at', '3'), 'scene');
    assert.equal(named('--store', 'runs.db', 'ls'), 'ls', 'a value of --store is not a command');
    assert.equal(named('--store=runs.db', '--debug', 'info', '1'), 'info');
    assert.equal(named('--tables', 'ls', 'sql', 'SELECT 1'), 'sql', 'even a value that is a command name');
    assert.equal(named('help', 'scene'), undefined, 'help lists or describes any command: all are loaded');
    assert.equal(named('--bogus', 'ls'), undefined, 'an option the program lacks: commander says so');
    assert.equal(named('--version'), undefined);
    assert.equal(named(), undefined);
  });
});
