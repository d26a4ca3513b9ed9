import type { Command } from 'commander';
import { perceptionStats, writeHeatmapPng } from '../../formats/common/labelled-images/perception-stats.js';
import { invalid } from '../../model/errors.js';
import { storeRunSource } from '../../replay/run-source.js';
import { parseRunId } from '../args.js';
import { formatNumber, printJson, printTable } from '../output.js';
import { withExistingStore } from '../with-store.js';
import { printWarnings } from '../warnings.js';

/** `simrec stats RUN`: what a dataset of captures holds (object counts, sizes, a box heat map). */
export function registerStatsCommand(program: Command): void {
  program
    .command('stats')
    .description('object counts per frame and per label, box relative sizes and a box heat map of a run')
    .argument('<run>', 'run id', parseRunId)
    .option('--heatmap <file>', 'write the box heat map as a PNG')
    .option('--json', 'print JSON')
    .action(async (run: number, opts: { json?: boolean; heatmap?: string }, command: Command) => {
      const { info, stats } = await withExistingStore(command, async (store) => {
        const source = await storeRunSource(store, run);
        return { info: source.run, stats: await perceptionStats(source) };
      });
      if (opts.heatmap) await writeHeatmapPng(stats.heatmap, opts.heatmap);
      if (opts.json) return printJson({ ...stats, run: info });
      printWarnings(stats.warnings);
      printTable(
        ['FIELD', 'VALUE'],
        [
          ['captures', stats.captures],
          ['images with boxes', stats.perFrame.filter((f) => f.count > 0).length],
          ['boxes', stats.boxes],
          ['boxes per frame (mean)', formatNumber(stats.boxes / Math.max(1, stats.perFrame.length))],
          ...stats.perLabel.map((l) => [`label ${l.label}`, l.count]),
          [
            'relative size (quartiles)',
            stats.relativeSize.quartiles.map((q) => formatNumber(q)).join(' / ') || '-',
          ],
          ...(opts.heatmap ? [['heat map', opts.heatmap]] : []),
        ],
      );
    });
}

/**
 * The per-format nouns of simrec 0.1 (`simrec soda import`, `simrec coco export`...) went when
 * `simrec import|export FORMAT` took over their work; typed from habit, they say what replaced them.
 */
export function registerMovedCommands(program: Command): void {
  for (const format of ['perception', 'solo', 'coco', 'yolo', 'soda']) {
    const redirect = (): never => {
      throw invalid(
        `simrec ${format} ...: use \`simrec import ${format} LOCATION\` or \`simrec export RUN ${format} LOCATION\` (simrec help import)`,
      );
    };
    const moved = program
      .command(format, { hidden: true })
      .argument('[words...]')
      // `--help` too is a word here: its own usage would be empty, and what the user wants is the redirect.
      .helpOption(false)
      .allowUnknownOption()
      .action(redirect);
    // `simrec help solo` asks the command for its help directly: the redirect, not an empty usage.
    moved.help = redirect;
  }
}
