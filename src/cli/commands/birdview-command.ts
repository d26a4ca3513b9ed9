import type { Command } from 'commander';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { invalid } from '../../model/errors.js';
import { secondsToMicros } from '../../model/units.js';
import { storeRunSource } from '../../replay/run-source.js';
import { parseRunId, parseSeconds } from '../args.js';
import { printJson } from '../output.js';
import { requireFreeOutput, requireParentFolder } from '../output-target.js';
import { withExistingStore } from '../with-store.js';
import { requireWithinRun } from './query-commands.js';

/**
 * `simrec birdview RUN --at T --out FILE.png`: the bird's-eye view the DI-drive export holds for that
 * moment, as a picture in DI-drive's own `visualize_birdview` colours (all nine channels, so the hero
 * and the route, which the LMDB value leaves out, are shown too).
 */
export function registerBirdviewCommand(program: Command): void {
  program
    .command('birdview')
    .description("DI-drive's bird's-eye view of a run at a time, as a PNG (what `export RUN didrive` stores)")
    .argument('<run>', 'run id', parseRunId)
    .requiredOption('--at <seconds>', "time in seconds from the run's start", (v) => parseSeconds('--at', v))
    .requiredOption('--out <file>', 'the PNG file to write')
    .option('--force', 'replace the file at --out')
    .option('--json', 'print JSON')
    .action(
      async (
        run: number,
        opts: { at: number; out: string; force?: boolean; json?: boolean },
        command: Command,
      ) =>
        withExistingStore(command, async (store) => {
          if (!opts.out.toLowerCase().endsWith('.png'))
            throw invalid(`--out ${opts.out}: expected a file name ending in .png`);
          const source = await storeRunSource(store, run);
          const info = source.run;
          requireWithinRun('--at', opts.at, info);
          requireParentFolder(opts.out);
          requireFreeOutput(opts.out, Boolean(opts.force));
          const t = info.begin + secondsToMicros(opts.at);
          const [{ encode: encodePng }, codec] = await Promise.all([
            import('fast-png'),
            import('../../formats/didrive/codec.js'),
          ]);
          const { BIRDVIEW_PIXELS_PER_METER, BIRDVIEW_SIZE, CHANNELS, HERO_COLUMN, HERO_ROW } = codec;
          const { birdview, network } = await codec.birdviewAt(source, t);
          const png = encodePng({
            width: BIRDVIEW_SIZE,
            height: BIRDVIEW_SIZE,
            data: birdview.rgb(),
            channels: 3,
            depth: 8,
          });
          // Written whole or not at all.
          const temp = `${opts.out}.partial-${process.pid}`;
          try {
            writeFileSync(temp, png);
            renameSync(temp, opts.out);
          } catch (error) {
            rmSync(temp, { force: true });
            throw error;
          }
          const pixels = Object.fromEntries(CHANNELS.map((c) => [c, birdview.count(c)]));
          const warnings = network
            ? []
            : [`run ${run}: no road network attached; the road, lane-line and light channels are empty`];
          if (opts.json)
            return printJson({
              run: info,
              t,
              out: opts.out,
              size: [BIRDVIEW_SIZE, BIRDVIEW_SIZE],
              pixelsPerMeter: BIRDVIEW_PIXELS_PER_METER,
              hero: { column: HERO_COLUMN, row: HERO_ROW },
              pixels,
              warnings,
            });
          for (const w of warnings) process.stderr.write(`simrec: warning: ${w}\n`);
          process.stdout.write(
            `${opts.out}: ${BIRDVIEW_SIZE}x${BIRDVIEW_SIZE}, ${CHANNELS.map((c) => `${c} ${pixels[c]}`).join(', ')} pixels\n`,
          );
        }),
    );
}
