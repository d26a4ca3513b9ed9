import type { Command } from 'commander';
import { printJson, printTable } from '../output.js';
import { tablesFolderOf, withExistingStore } from '../with-store.js';

export function registerCheckCommand(program: Command): void {
  program
    .command('check')
    .description(
      "check the store's integrity: every chunk readable, every counter right, the tables in step (--repair mends)",
    )
    .option('--repair', 'recompute counters and remove chunks that cannot be read (reported)')
    .option('--json', 'print JSON')
    .action(async (opts: { repair?: boolean; json?: boolean }, command: Command) =>
      withExistingStore(command, async (store) => {
        const { checkTables } = await import('../../tables/tables-status.js');
        const report = await store.checkIntegrity({ repair: Boolean(opts.repair) });
        // The tables after the store: a repair that removed chunks changed runs they were written from.
        const tableProblems = await checkTables(store, tablesFolderOf(command, store), {
          repair: Boolean(opts.repair),
        });
        report.problems.push(...tableProblems);
        if (tableProblems.some((p) => !p.repaired)) report.ok = false;
        if (opts.json) printJson(report);
        else {
          process.stdout.write(
            `${store.location}: ${report.runs} runs, ${report.streams} streams, ${report.chunks} chunks, ${report.samples} samples: ${report.ok ? 'ok' : 'PROBLEMS'}\n`,
          );
          if (report.problems.length)
            printTable(
              ['WHERE', 'PROBLEM', 'REPAIRED'],
              report.problems.map((p) => [p.where, p.problem, p.repaired ? 'yes' : 'no']),
            );
          if (!report.ok && !opts.repair)
            process.stdout.write('run `simrec check --repair` to mend what can be mended\n');
        }
        // Not ok is a failed check: scripts and CI see it in the exit code.
        if (!report.ok) process.exitCode = 1;
      }),
    );
}
