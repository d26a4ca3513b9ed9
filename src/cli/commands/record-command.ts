import { Option, type Command } from 'commander';
import type { DeepDriveRecordOptions } from '../../ingest/deepdrive-recorder.js';
import type { SumoArea, SumoRecordOptions } from '../../ingest/traci/sumo-recorder.js';
import { describeValue, invalid } from '../../model/errors.js';
import { DEEPDRIVE_SHM_PATH } from '../../record/capture/deepdrive-region.js';
import { SUMO_RECORDER_NICE } from '../../record/process-priority.js';
import { parseNiceness, parsePositive, parseSeconds } from '../args.js';
import { printJson, Progress } from '../output.js';
import { withStore } from '../with-store.js';
import { exitInterrupted, untilInterrupted } from '../interrupt.js';
import { writeTablesAfter } from './tables-command.js';
import { printWarnings } from '../warnings.js';

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
  nice: number;
  json?: boolean;
}

interface DeepDriveCommandOptions {
  shm?: string;
  interval?: number;
  disk?: string;
  snapshots?: number;
  idle?: number;
  json?: boolean;
}

/** `record sumo`, `record deepdrive`: record a live simulator. */
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
    .addOption(
      new Option(
        '--nice <n>',
        "run the recorder this much below SUMO's scheduling priority, so recording never takes a core SUMO wants (0: share equally)",
      )
        .argParser((v) => parseNiceness('--nice', v))
        .default(SUMO_RECORDER_NICE),
    )
    .option('--json', 'print the result as JSON')
    .action(async (config: string | undefined, opts: SumoCommandOptions, command: Command) =>
      withStore(command, async (store) => {
        if (opts.area.kind === 'ego' && !opts.ego) throw invalid('--area ego:RADIUS needs --ego ID');
        const { recordSumo } = await import('../../ingest/traci/sumo-recorder.js');
        const progress = new Progress('recording SUMO');
        // Ctrl-C ends the recording cleanly (the run ends user_request with every step it has).
        const { result, interrupted } = await untilInterrupted((signal) => {
          const args: SumoRecordOptions = {
            area: opts.area,
            signal,
            recorderNice: opts.nice,
            // The bar fills when the end is known (the config's <end>, --end, --duration); else it counts.
            onStep: (s, total) =>
              progress.update(
                total ? s / total : 0,
                total ? `${s.toFixed(1)} / ${total} s` : `${s.toFixed(1)} s`,
              ),
          };
          if (config) args.config = config;
          if (opts.net) args.net = opts.net;
          if (opts.routes) args.routes = opts.routes.split(',');
          if (opts.stepLength) args.stepLength = opts.stepLength;
          if (opts.ego) args.ego = opts.ego;
          if (opts.duration) args.duration = opts.duration;
          if (opts.sumoArgs) args.sumoArgs = opts.sumoArgs.split(' ').filter(Boolean);
          return recordSumo(store, args);
        });
        progress.done();
        // Interrupted, the tables are left to the first query that needs them: the user asked to stop.
        if (!interrupted) await writeTablesAfter(command, store, [result.run.id]);
        if (opts.json) printJson(result);
        else {
          printWarnings(result.warnings);
          process.stdout.write(
            `recorded run ${result.run.id} (${result.run.endReason}): ${result.steps} steps, ${result.vehicles} vehicles, ${result.persons} persons, ${result.trafficLights} traffic lights\n`,
          );
        }
        return interrupted
          ? `run ${result.run.id} is kept in ${store.location} with the ${result.steps} steps recorded (ended ${result.run.endReason})`
          : null;
      }).then((kept) => {
        if (kept !== null) exitInterrupted(kept);
      }),
    );
  record
    .command('deepdrive')
    .description(
      "read deepdrive's shared-memory capture region and record each new snapshot once: the agent's state and every camera (half-float RGB and depth)",
    )
    .option('--shm <path>', `the region file (default ${DEEPDRIVE_SHM_PATH})`)
    .option(
      '--interval <seconds>',
      'capture interval: 0 every snapshot, > 0 at most once per that many seconds',
      (v) => parseSeconds('--interval', v),
    )
    .option(
      '--disk <dir>',
      'also keep the snapshots in a folder: one folder per camera, agent.jsonl beside them',
    )
    .option('--snapshots <n>', 'end after this many snapshots', (v) => parsePositive('--snapshots', v))
    .option('--idle <seconds>', 'end when no new snapshot came for this long (default 10)', (v) =>
      parsePositive('--idle', v),
    )
    .option('--json', 'print the result as JSON')
    .action(async (opts: DeepDriveCommandOptions, command: Command) =>
      withStore(command, async (store) => {
        const { recordDeepDrive } = await import('../../ingest/deepdrive-recorder.js');
        const progress = new Progress('recording deepdrive');
        const { result, interrupted } = await untilInterrupted((signal) => {
          const args: DeepDriveRecordOptions = {
            signal,
            onSnapshot: (n) => progress.update(opts.snapshots ? n / opts.snapshots : 0, `${n} snapshots`),
          };
          if (opts.shm) args.shm = opts.shm;
          if (opts.interval !== undefined) args.interval = opts.interval;
          if (opts.disk) args.diskDir = opts.disk;
          if (opts.snapshots) args.maxSnapshots = opts.snapshots;
          if (opts.idle) args.idleSeconds = opts.idle;
          return recordDeepDrive(store, args);
        });
        progress.done();
        if (opts.json) printJson(result);
        else
          process.stdout.write(
            `recorded run ${result.run.id} (${result.run.endReason}): ${result.snapshots} snapshots, ${result.captured} captured, ${result.frames} camera frames${result.diskDir ? `, also in ${result.diskDir}` : ''}\n`,
          );
        return interrupted
          ? `run ${result.run.id} is kept in ${store.location} with the ${result.snapshots} snapshots recorded (ended ${result.run.endReason})`
          : null;
      }).then((kept) => {
        if (kept !== null) exitInterrupted(kept);
      }),
    );
}
