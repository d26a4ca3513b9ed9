import { Option, type Command } from 'commander';
import { recordSumo, type SumoArea, type SumoRecordOptions } from '../../ingest/traci/sumo-recorder.js';
import { describeValue, invalid } from '../../model/errors.js';
import { parsePositive } from '../args.js';
import { printJson, Progress } from '../output.js';
import { withStore } from '../with-store.js';

function parseArea(value: string): SumoArea {
  if (value === 'all') return { kind: 'all' };
  const n = '(-?\\d+(?:\\.\\d+)?)';
  const ego = new RegExp(`^ego:${n}$`).exec(value);
  if (ego) return { kind: 'ego', radius: Number(ego[1]) };
  const local = new RegExp(`^local:${n},${n},${n}$`).exec(value);
  if (local) return { kind: 'local', x: Number(local[1]), y: Number(local[2]), radius: Number(local[3]) };
  throw invalid(`--area: expected all, ego:RADIUS or local:X,Y,RADIUS (metres), got ${describeValue(value)}`);
}

interface SumoCommandOptions {
  net?: string;
  routes?: string;
  stepLength?: number;
  ego?: string;
  area: SumoArea;
  duration?: number;
  sumoArgs?: string;
  json?: boolean;
}

/** `record sumo`: record a live simulator. */
export function registerRecordCommand(program: Command): void {
  const record = program.command('record').description('record a live simulator');
  record
    .command('sumo')
    .description('start SUMO headless, step it over TraCI and record every vehicle, person and traffic light')
    .argument('[config]', 'a .sumocfg (or give --net and --routes)')
    .option('--net <file>', 'SUMO network, when no config is given')
    .option('--routes <files>', 'route files, comma-separated as SUMO takes them')
    .option('--step-length <seconds>', 'seconds per step (default: the config, or 1)', (v) =>
      parsePositive('--step-length', v),
    )
    .option('--ego <id>', 'the vehicle recorded as the ego')
    .addOption(
      new Option(
        '--area <area>',
        'all; ego:RADIUS around the ego (LimSim ego tracking); local:X,Y,RADIUS around a point (LimSim fixed scene)',
      )
        .argParser(parseArea)
        .default({ kind: 'all' }, 'all'),
    )
    .option('--duration <seconds>', 'simulated seconds to record at most', (v) =>
      parsePositive('--duration', v),
    )
    .option('--sumo-args <args>', 'more SUMO arguments, space-separated (e.g. "--fcd-output fcd.xml")')
    .option('--json', 'print the result as JSON')
    .action(async (config: string | undefined, opts: SumoCommandOptions, command: Command) =>
      withStore(command, async (store) => {
        if (opts.area.kind === 'ego' && !opts.ego) throw invalid('--area ego:RADIUS needs --ego ID');
        const progress = new Progress('recording SUMO');
        const abort = new AbortController();
        const stop = (): void => abort.abort();
        process.once('SIGINT', stop);
        const args: SumoRecordOptions = {
          area: opts.area,
          signal: abort.signal,
          onStep: (s) => progress.update(opts.duration ? s / opts.duration : 0, `${s.toFixed(1)} s`),
        };
        if (config) args.config = config;
        if (opts.net) args.net = opts.net;
        if (opts.routes) args.routes = opts.routes.split(',');
        if (opts.stepLength) args.stepLength = opts.stepLength;
        if (opts.ego) args.ego = opts.ego;
        if (opts.duration) args.duration = opts.duration;
        if (opts.sumoArgs) args.sumoArgs = opts.sumoArgs.split(' ').filter(Boolean);
        try {
          const result = await recordSumo(store, args);
          progress.done();
          if (opts.json) printJson(result);
          else
            process.stdout.write(
              `recorded run ${result.run.id} (${result.run.endReason}): ${result.steps} steps, ${result.vehicles} vehicles, ${result.persons} persons, ${result.trafficLights} traffic lights\n`,
            );
        } finally {
          process.off('SIGINT', stop);
        }
      }),
    );
}
