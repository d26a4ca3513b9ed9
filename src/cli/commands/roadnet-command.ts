import type { Command } from 'commander';
import { summarizeRoadNetwork } from '../../model/roadnet.js';
import { parsePositive, parseRunId } from '../args.js';
import { formatNumber, printJson, printTable } from '../output.js';
import { withStore } from '../with-store.js';
import { printWarnings } from '../warnings.js';

interface RoadnetOptions {
  json?: boolean;
  resolution?: number;
  strict?: boolean;
  attach?: number;
}

/** `roadnet FILE`: reads a SUMO .net.xml or an OpenDRIVE .xodr, summarizes it, and can keep it with a run. */
export function registerRoadnetCommand(program: Command): void {
  program
    .command('roadnet')
    .description(
      'read a road network (SUMO .net.xml or OpenDRIVE .xodr, told apart by content) and summarize it',
    )
    .argument('<file>', 'the network file')
    .option('--json', 'print JSON')
    .option('--resolution <metres>', 'OpenDRIVE sampling step (default 0.5)', (v) =>
      parsePositive('--resolution', v),
    )
    .option('--strict', 'treat warnings as errors')
    .option('--attach <run>', 'keep the network with this run (in --store)', parseRunId)
    .action(async (file: string, opts: RoadnetOptions, command: Command) => {
      const readOptions: { resolution?: number; strict?: boolean } = {};
      if (opts.resolution !== undefined) readOptions.resolution = opts.resolution;
      if (opts.strict) readOptions.strict = true;
      const [{ readRoadNetworkFile }, { attachRoadNetwork }] = await Promise.all([
        import('../../roadnet/read-roadnet.js'),
        import('../../roadnet/roadnet-attachment.js'),
      ]);
      const { network, warnings } = await readRoadNetworkFile(file, readOptions);
      printWarnings(warnings);
      const summary = summarizeRoadNetwork(network);
      if (opts.attach !== undefined) {
        const run = opts.attach;
        await withStore(command, (store) => attachRoadNetwork(store, run, network));
      }
      if (opts.json)
        return printJson({
          file,
          ...summary,
          warnings,
          ...(opts.attach === undefined ? {} : { attachedTo: opts.attach }),
        });
      const { bounds } = summary;
      printTable(
        ['FIELD', 'VALUE'],
        [
          ['file', file],
          ['format', summary.version ? `${summary.format} ${summary.version}` : summary.format],
          ['lanes', `${summary.lanes} (${byKind(summary.lanesByFunction)})`],
          ['edges', `${summary.edges} (${byKind(summary.edgesByFunction)})`],
          ['junctions', `${summary.junctions} (${byKind(summary.junctionsByKind)})`],
          ['connections', summary.connections],
          ['trafficLights', summary.trafficLights],
          ['laneMarks', summary.laneMarks],
          ['totalLaneLength', `${formatNumber(summary.totalLaneLength)} m of normal traffic lanes`],
          [
            'bounds',
            `(${bounds.min.map(formatNumber).join(', ')}) to (${bounds.max.map(formatNumber).join(', ')})`,
          ],
          ['warnings', warnings.length],
        ],
      );
      if (opts.attach !== undefined) process.stdout.write(`kept with run ${opts.attach}\n`);
    });
}

/** "normal 80, internal 40": the kinds a network has, none of those it has not. */
function byKind(counts: Record<string, number>): string {
  return Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
}
