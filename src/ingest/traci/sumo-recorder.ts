import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { describeValue, invalid, SimrecError } from '../../model/errors.js';
import type { ColumnInput, FrameInput } from '../../model/columns.js';
import type { JsonObject } from '../../model/json.js';
import type { EndReason, RunInfo } from '../../model/run.js';
import { SIGNAL_STREAM, signalStream, STATE_FIELDS } from '../../model/standard-streams.js';
import type { StoreBackend } from '../../model/store-port.js';
import { sumoAngleToYaw, sumoFrontToCentre } from '../../model/units.js';
import { lowerProcessPriority } from '../../record/process-priority.js';
import { RunRecorder } from '../../record/run-recorder.js';
import { readRoadNetworkFile } from '../../roadnet/read-roadnet.js';
import { attachRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { TraciClient, type SubscriptionResult } from './traci-client.js';
import { VAR, type ContextColumn, type TraciValue } from './traci-protocol.js';

/** The oldest TraCI API this recorder has been tested with (SUMO 1.15 speaks 20). */
const MIN_TRACI_API = 18;

/**
 * Which vehicles to record: all; those within `radius` of the ego (LimSim's ego tracking: AoI within
 * half the radius, outOfAoI beyond); or those within 2 x `radius` of a fixed point (LimSim's fixed
 * scene: AoI within the radius, outOfAoI beyond).
 */
export type SumoArea =
  { kind: 'all' } | { kind: 'ego'; radius: number } | { kind: 'local'; x: number; y: number; radius: number };

export interface SumoRecordOptions {
  /** A .sumocfg; or `net` (and `routes`) instead. */
  config?: string;
  net?: string;
  routes?: string[];
  /** Seconds per step; SUMO's own (from the config, or 1 s) when absent. */
  stepLength?: number;
  /** The vehicle recorded as the ego (LimSim's ego tracking). */
  ego?: string;
  /** Every vehicle (default), or those within a radius of the ego (tagged ego / AoI / outOfAoI). */
  area?: SumoArea;
  /** Simulated seconds to record at most. */
  duration?: number;
  /** The sumo binary; default $SUMO_BINARY or `sumo` on the PATH. */
  sumoBinary?: string;
  /** More arguments for SUMO (e.g. `--fcd-output FILE`). */
  sumoArgs?: string[];
  /**
   * After each step: the simulated seconds so far, and the seconds the recording will last when that
   * is known (the config's or `--end`'s end, or `duration`), for a progress bar.
   */
  onStep?: (simSeconds: number, totalSeconds: number | undefined) => void;
  signal?: AbortSignal;
  /**
   * Lowers this process's scheduling priority by this much once SUMO has started (SUMO keeps its own;
   * see lowerProcessPriority): the recording then runs in SUMO's idle time rather than taking turns
   * with it, falling behind instead (by BACKLOG_MS at most, which then holds SUMO back). For every
   * thread of the process, for the rest of its life: `simrec record sumo` uses SUMO_RECORDER_NICE; a
   * library caller decides. Default 0: unchanged.
   */
  recorderNice?: number;
}

/**
 * What `simrec record sumo` lowers its priority by. Measured on LimSim's bigInter (2 cores, 6,000
 * steps, five runs each): SUMO ran 2,560-2,690 steps a second recorded at equal priority, preempted
 * about 1,000 times; 2,930-3,150 a second with SUMO first (steps sent 32 or 64 ahead), preempted 150.
 */
export const SUMO_RECORDER_NICE = 5;

export interface SumoRecordResult {
  run: RunInfo;
  steps: number;
  vehicles: number;
  persons: number;
  trafficLights: number;
  /** Vehicle types whose limits, size and class were read (once each). */
  vehicleTypes: number;
  /** What the recording could not do as asked (an `--ego` that never departed, say). */
  warnings: string[];
}

/** How far (wall time) recording may run ahead of what is known durable. */
const BACKLOG_MS = 1000;
/**
 * Steps sent ahead of the one being recorded. SUMO reads its messages in order, so it goes from one
 * step to the next without waiting for this process (a round trip per step cost half its speed). With
 * the recorder below SUMO's priority, 16 steps (4 ms of bigInter) ran out while this process waited
 * for a core, and SUMO waited in turn: 32 measured 6% faster (64: 4% more). But a vehicle's route and
 * type are asked when its departure is read, behind the steps in flight, and a vehicle gone by then is
 * recorded without them: so the steps in flight span at most IN_FLIGHT_SECONDS of SUMO's time (32
 * steps at LimSim's 0.1 s), and never fewer than MIN_IN_FLIGHT (16 s at SUMO's default 1 s steps, as
 * before).
 */
const MAX_IN_FLIGHT = 32;
const MIN_IN_FLIGHT = 16;
const IN_FLIGHT_SECONDS = 3.2;
const stepsInFlight = (dt: number): number =>
  Math.max(MIN_IN_FLIGHT, Math.min(MAX_IN_FLIGHT, Math.round(IN_FLIGHT_SECONDS / dt)));

/** The frame's numeric columns, moved together when rows out of the area are dropped. */
const NUMBER_COLUMNS = ['x', 'y', 'z', 'yaw', 'speed', 'accel', 'lanePos', 'routeIdx', 'signals'] as const;

/** What says, in a step's simulation results, that actors left the road during it. */
const ARRIVAL_VARS = [
  VAR.ARRIVED_VEHICLES_IDS,
  VAR.ARRIVED_PERSONS_IDS,
  VAR.TELEPORT_STARTING_VEHICLES_IDS,
] as const;

/**
 * A step's state columns, kept from step to step: appendFrame copies a frame's values, so the recorder
 * fills the same arrays at every step instead of making a dozen a step.
 */
class StepColumns {
  readonly ids: string[] = [];
  readonly lane: (string | undefined)[] = [];
  readonly vtag: (string | undefined)[] = [];
  /** What a row's actor is declared with, should it be new. */
  readonly lengths: number[] = [];
  readonly widths: number[] = [];
  readonly isPerson: boolean[] = [];
  readonly typeIds: (string | undefined)[] = [];
  private numbers = StepColumns.numberColumns(0);

  private static numberColumns(rows: number): Record<(typeof NUMBER_COLUMNS)[number], Float64Array> {
    return Object.fromEntries(NUMBER_COLUMNS.map((name) => [name, new Float64Array(rows)])) as Record<
      (typeof NUMBER_COLUMNS)[number],
      Float64Array
    >;
  }

  /** The numeric columns, with room for `rows` rows. */
  reserve(rows: number): Record<(typeof NUMBER_COLUMNS)[number], Float64Array> {
    const capacity = this.numbers.x.length;
    if (rows > capacity) this.numbers = StepColumns.numberColumns(Math.max(rows, 2 * capacity, 64));
    return this.numbers;
  }

  /**
   * Every vehicle and person of a step's context subscriptions, straight from their columns: the
   * centre of each (SUMO gives the front bumper), no object per actor. A function of its own, as is
   * keepArea, rather than the body of the recorder's step: V8 compiled that whole step four times in a
   * run (deoptimised as new paths were reached), 90 to 125 ms each on the other core.
   */
  fill(
    results: readonly SubscriptionResult[],
    shapes: ReadonlyMap<string, { length: number; width: number }>,
  ): void {
    const { ids, lane, lengths, widths, isPerson, typeIds } = this;
    let rows = 0;
    for (const r of results) if (isActorContext(r)) rows += r.contextColumns!.ids.length;
    const columns = this.reserve(rows);
    ids.length = 0;
    for (const r of results) {
      if (!isActorContext(r)) continue;
      const { ids: objects, columns: c } = r.contextColumns!;
      const position = positionsOf(c.get(VAR.POSITION3D));
      if (!position) continue;
      const angle = numbersOf(c.get(VAR.ANGLE));
      const speed = numbersOf(c.get(VAR.SPEED));
      const length = numbersOf(c.get(VAR.LENGTH));
      const width = numbersOf(c.get(VAR.WIDTH));
      const accel = numbersOf(c.get(VAR.ACCELERATION));
      const lanePos = numbersOf(c.get(VAR.LANEPOSITION));
      const routeIdx = numbersOf(c.get(VAR.ROUTE_INDEX));
      const signals = numbersOf(c.get(VAR.SIGNALS));
      const laneIds = stringsOf(c.get(VAR.LANE_ID));
      const type = stringsOf(c.get(VAR.TYPE));
      const person = r.contextDomain === 'person';
      for (let o = 0; o < objects.length; o++) {
        const frontX = position.x[o]!;
        if (Number.isNaN(frontX)) continue;
        const id = objects[o]!;
        const shape = shapes.get(id);
        const l = numberAt(length, o, shape?.length ?? 4.5);
        const yaw = sumoAngleToYaw(numberAt(angle, o, 90));
        const row = ids.push(id) - 1;
        columns.x[row] = sumoFrontToCentre(frontX, Math.cos(yaw), l);
        columns.y[row] = sumoFrontToCentre(position.y[o]!, Math.sin(yaw), l);
        columns.z[row] = numberAt(position.z, o, 0);
        columns.yaw[row] = yaw;
        columns.speed[row] = numberAt(speed, o, 0);
        columns.accel[row] = numberAt(accel, o, NaN);
        // SUMO's lane position is the front bumper's; the model's, like LimSim's, is the centre's.
        columns.lanePos[row] = sumoFrontToCentre(numberAt(lanePos, o, NaN), 1, l);
        columns.routeIdx[row] = numberAt(routeIdx, o, NaN);
        columns.signals[row] = numberAt(signals, o, NaN);
        const laneId = laneIds?.[o];
        lane[row] = laneId !== undefined && laneId !== '' ? laneId : undefined;
        lengths[row] = l;
        widths[row] = numberAt(width, o, shape?.width ?? 1.8);
        isPerson[row] = person;
        typeIds[row] = type?.[o];
      }
    }
  }

  /**
   * Keeps the rows within the area, tagged as LimSim tags them (`ego`, `AoI`, `outOfAoI`), dropping the
   * others in place; `kept(id, row)` is told of each row kept, before it moves.
   */
  keepArea(area: SumoArea, ego: string | undefined, kept: (id: string, row: number) => void): void {
    const { ids, lane, vtag } = this;
    const columns = this.numbers;
    const egoRow = ego === undefined ? -1 : ids.indexOf(ego);
    let at = 0;
    for (let row = 0; row < ids.length; row++) {
      const id = ids[row]!;
      let tag: string | undefined;
      const x = columns.x[row]!;
      const y = columns.y[row]!;
      if (area.kind === 'ego') {
        if (egoRow < 0) continue;
        const d = row === egoRow ? 0 : Math.hypot(x - columns.x[egoRow]!, y - columns.y[egoRow]!);
        if (d > area.radius) continue;
        tag = row === egoRow ? 'ego' : d <= area.radius / 2 ? 'AoI' : 'outOfAoI';
      } else if (area.kind === 'local') {
        const d = Math.hypot(x - area.x, y - area.y);
        if (d > 2 * area.radius) continue;
        tag = d <= area.radius ? 'AoI' : 'outOfAoI';
      } else if (ego) tag = row === egoRow ? 'ego' : undefined;
      kept(id, row);
      if (at !== row) {
        ids[at] = id;
        for (const name of NUMBER_COLUMNS) columns[name][at] = columns[name][row]!;
        lane[at] = lane[row];
      }
      vtag[at] = tag;
      at++;
    }
    ids.length = at;
    lane.length = at;
    vtag.length = at;
  }

  /** The frame's columns: the first `rows` rows (the area drops rows in place, at the end). */
  kept(rows: number): FrameInput['columns'] {
    const kept: FrameInput['columns'] = {};
    for (const name of NUMBER_COLUMNS) kept[name] = this.numbers[name].subarray(0, rows);
    kept.lane = this.lane;
    kept.vtag = this.vtag;
    return kept;
  }
}

/** A context subscription of vehicles or persons: the actors a step records. */
const isActorContext = (r: SubscriptionResult): boolean =>
  r.contextColumns !== undefined && (r.contextDomain === 'vehicle' || r.contextDomain === 'person');

/**
 * The step's traffic-light signals as one frame of columns (SUMO's times: `now` after the step,
 * `began` when it began), a row per light that sent its state: no sample object per light.
 */
function lightSignals(
  results: readonly SubscriptionResult[],
  now: number,
  began: number,
): { actors: string[]; columns: Record<string, ColumnInput> } {
  const actors: string[] = [];
  const state: string[] = [];
  const phase: number[] = [];
  const program: string[] = [];
  const timeToSwitch: number[] = [];
  for (const r of results) {
    if (r.domain !== 'trafficLight') continue;
    const lightState = r.values.get(VAR.TL_RED_YELLOW_GREEN_STATE);
    if (typeof lightState !== 'string') continue;
    actors.push(r.id);
    state.push(lightState);
    phase.push(num(r.values.get(VAR.TL_CURRENT_PHASE)) ?? 0);
    program.push(String(r.values.get(VAR.TL_CURRENT_PROGRAM) ?? ''));
    timeToSwitch.push(Math.max(0, (num(r.values.get(VAR.TL_NEXT_SWITCH)) ?? now) - began));
  }
  return { actors, columns: { state, phase, program, timeToSwitch } };
}

/** A context column's numbers; undefined when SUMO sent none (or, against its protocol, other values). */
function numbersOf(column: ContextColumn | undefined): readonly number[] | undefined {
  if (column?.kind === 'number') return column.values;
  if (column?.kind === 'value') return column.values.map((v) => (typeof v === 'number' ? v : NaN));
  return undefined;
}

/** A context column's strings. */
function stringsOf(column: ContextColumn | undefined): readonly (string | undefined)[] | undefined {
  if (column?.kind === 'string') return column.values;
  if (column?.kind === 'value') return column.values.map((v) => (typeof v === 'string' ? v : undefined));
  return undefined;
}

/** A context column's positions (x, y and z by object). */
function positionsOf(
  column: ContextColumn | undefined,
): Extract<ContextColumn, { kind: 'position' }> | undefined {
  if (column?.kind === 'position') return column;
  if (column?.kind !== 'value') return undefined;
  const coordinate = (k: number): number[] =>
    column.values.map((v) => (Array.isArray(v) && typeof v[k] === 'number' ? v[k] : NaN));
  return { kind: 'position', dims: 3, x: coordinate(0), y: coordinate(1), z: coordinate(2) };
}

/**
 * Row `o` of a column of numbers, or `fallback` where the object had no value (or there is no column).
 * Always a number: a value-or-undefined passed on is boxed, a heap number per value.
 */
const numberAt = (values: readonly number[] | undefined, o: number, fallback: number): number => {
  if (values === undefined) return fallback;
  const v = values[o]!;
  return Number.isNaN(v) ? fallback : v;
};

export const VEHICLE_VARS = [
  VAR.POSITION3D,
  VAR.ANGLE,
  VAR.SPEED,
  VAR.ACCELERATION,
  VAR.LANE_ID,
  VAR.LANEPOSITION,
  VAR.ROUTE_INDEX,
  VAR.SIGNALS,
];
/**
 * Asked once, when a vehicle departs: its whole route and its type, whose limits LimSim's recorder keeps
 * in vehicleINFO (routes, maxAccel, maxDecel, maxSpeed) and its planner needs, and its own speed factor
 * (drawn by SUMO from its type's speedFactor and speedDev: it drives up to that times a lane's limit),
 * which the evaluator's speeding events respect.
 */
const VEHICLE_ONCE_VARS = [VAR.EDGES, VAR.TYPE, VAR.SPEED_FACTOR];
/**
 * Asked once per vehicle type, when its first vehicle departs: its limits and size, which every vehicle
 * of the type shares (kept as each vehicle's attributes and extents).
 */
const TYPE_VARS = [VAR.ACCEL, VAR.DECEL, VAR.MAXSPEED, VAR.LENGTH, VAR.WIDTH, VAR.VEHICLECLASS];
const PERSON_VARS = [VAR.POSITION3D, VAR.ANGLE, VAR.SPEED, VAR.TYPE, VAR.LENGTH, VAR.WIDTH];
const LIGHT_VARS = [
  VAR.TL_RED_YELLOW_GREEN_STATE,
  VAR.TL_CURRENT_PHASE,
  VAR.TL_CURRENT_PROGRAM,
  VAR.TL_NEXT_SWITCH,
];

/** SUMO's vehicle state, plus what LimSim records beside it: the route index, the signals, the tag. */
const SUMO_STATE_FIELDS = [
  ...STATE_FIELDS,
  { name: 'routeIdx', type: 'i32' as const, optional: true },
  {
    name: 'signals',
    type: 'i32' as const,
    optional: true,
    description: "SUMO's signal bits (blinkers, brake light...)",
  },
  {
    name: 'vtag',
    type: 'string' as const,
    optional: true,
    description: "LimSim's tag: ego, AoI or outOfAoI",
  },
];

interface SumoInputs {
  net: string;
  routes: string[];
  args: string[];
  stepLength: number | undefined;
  /** The simulation's begin and end times (seconds), from the config's <time>. */
  begin: number | undefined;
  end: number | undefined;
}

/** A time value of SUMO's (seconds, or SUMO's H:M:S form), or undefined. */
function sumoTime(value: string | undefined, where: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const parts = value.split(':').map(Number);
  const seconds = parts.reduce((sum, p) => sum * 60 + p, 0);
  if (parts.some((p) => !Number.isFinite(p)) || parts.length > 4)
    throw invalid(`${where}: expected a time in seconds (or H:M:S), got ${describeValue(value)}`);
  return seconds;
}

/** `--end`/`-e` (and `--begin`/`-b`) among the extra SUMO arguments: they win over the config's. */
function argumentTime(args: readonly string[], long: string, short: string): number | undefined {
  for (let i = args.length - 2; i >= 0; i--)
    if (args[i] === long || args[i] === short) return sumoTime(args[i + 1], `--sumo-args ${args[i]}`);
  return undefined;
}

function configInputs(options: SumoRecordOptions): SumoInputs {
  if (options.config) {
    if (!existsSync(options.config))
      throw new SimrecError('not_found', `${options.config}: no such SUMO configuration`);
    const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' });
    let doc: Record<string, Record<string, Record<string, Record<string, string>>>>;
    try {
      doc = parser.parse(readFileSync(options.config, 'utf8'));
    } catch (error) {
      throw invalid(`${options.config}: not XML: ${(error as Error).message}`);
    }
    const config = doc.configuration ?? doc.sumoConfiguration;
    const value = (section: string, key: string): string | undefined => config?.[section]?.[key]?.value;
    const net = value('input', 'net-file');
    if (!net)
      throw invalid(
        `${options.config}: <input><net-file value=...> is missing; simrec records the network beside the run`,
      );
    const base = dirname(options.config);
    const step = value('time', 'step-length');
    return {
      net: resolve(base, net),
      routes: (value('input', 'route-files') ?? '')
        .split(',')
        .filter(Boolean)
        .map((r) => resolve(base, r.trim())),
      args: ['-c', options.config],
      stepLength: step === undefined ? undefined : Number(step),
      begin: sumoTime(value('time', 'begin'), `${options.config}: <time><begin>`),
      end: sumoTime(value('time', 'end'), `${options.config}: <time><end>`),
    };
  }
  if (!options.net) throw invalid('record sumo: give a .sumocfg, or --net (and --routes)');
  const routes = options.routes ?? [];
  return {
    net: options.net,
    routes,
    args: ['-n', options.net, ...(routes.length ? ['-r', routes.join(',')] : [])],
    stepLength: undefined,
    begin: undefined,
    end: undefined,
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/**
 * Records a live SUMO simulation over TraCI: starts `sumo` headless on a free port, steps it, and
 * records every vehicle (or the ego's area), persons and traffic lights, with the road network from
 * the config's net file. Positions are the vehicle's centre (SUMO reports the front bumper), times
 * are SUMO's step times (the state after a step carries the time the step began, as SUMO's own
 * outputs label it). The run ends `completed` when SUMO has nothing left to simulate or reaches its
 * end time, `user_request` when stopped (duration reached, aborted), `interrupted` when SUMO dies.
 */
export async function recordSumo(store: StoreBackend, options: SumoRecordOptions): Promise<SumoRecordResult> {
  const inputs = configInputs(options);
  const stepLength = options.stepLength ?? inputs.stepLength;
  const simBegin = argumentTime(options.sumoArgs ?? [], '--begin', '-b') ?? inputs.begin ?? 0;
  const simEnd = argumentTime(options.sumoArgs ?? [], '--end', '-e') ?? inputs.end;
  // SUMO under TraCI steps on past its end time as long as the client asks: the end is kept here.
  const endAfter = Math.min(
    options.duration ?? Infinity,
    simEnd === undefined ? Infinity : simEnd - simBegin,
  );
  const totalSeconds = Number.isFinite(endAfter) ? endAfter : undefined;
  if (stepLength !== undefined && !(stepLength > 0))
    throw invalid(`--step-length: expected a positive number of seconds, got ${describeValue(stepLength)}`);
  const { network } = await readRoadNetworkFile(inputs.net);

  const port = await freePort();
  const binary = options.sumoBinary ?? process.env.SUMO_BINARY ?? 'sumo';
  const args = [
    ...inputs.args,
    '--remote-port',
    String(port),
    '--no-step-log',
    'true',
    ...(stepLength ? ['--step-length', String(stepLength)] : []),
    ...(options.sumoArgs ?? []),
  ];
  let sumoError = '';
  let spawnFailure: Error | null = null;
  let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const sumo: ChildProcess = spawn(binary, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    // SUMO warns on every start without it, and needs it for its XML schemas.
    env: { SUMO_HOME: '/usr/share/sumo', ...process.env },
  });
  // After the spawn (SUMO is forked with this thread's priority): SUMO first, the recording after it.
  if (options.recorderNice) lowerProcessPriority(options.recorderNice);
  sumo.stderr!.on('data', (d: Buffer) => (sumoError = (sumoError + d.toString('utf8')).slice(-4000)));
  sumo.on('error', (error) => (spawnFailure = error));
  const sumoExited = new Promise<void>((r) =>
    sumo.on('exit', (code, signal) => ((exited = { code, signal }), r())),
  );
  // The timer is cleared once SUMO is gone: left running, it kept the process alive for seconds
  // after the run was recorded (`simrec record sumo` sat 5 s before its prompt came back).
  const sumoExitedWithin = async (ms: number): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([sumoExited, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  };
  const failedToStart = (): Error | null => {
    if (spawnFailure && (spawnFailure as NodeJS.ErrnoException).code === 'ENOENT')
      return new SimrecError(
        'unsupported',
        `SUMO is not installed (no ${binary} on the PATH): install it with \`apt-get install sumo sumo-tools\` (Debian) and set SUMO_HOME=/usr/share/sumo, or set SUMO_BINARY`,
      );
    if (spawnFailure)
      return new SimrecError('io', `cannot start ${binary}: ${(spawnFailure as Error).message}`);
    if (exited)
      return new SimrecError(
        'invalid',
        `SUMO refused to start (exit ${exited.code ?? exited.signal}): ${sumoError.trim() || 'no message'}`,
      );
    return null;
  };

  let client: TraciClient;
  try {
    client = await TraciClient.connect(port, { givenUp: failedToStart });
  } catch (error) {
    sumo.kill('SIGKILL');
    throw error;
  }
  let recorder: RunRecorder | undefined;
  try {
    const version = await client.getVersion();
    if (version.api < MIN_TRACI_API)
      throw new SimrecError(
        'unsupported',
        `TraCI version mismatch: ${version.identifier} speaks API ${version.api}; simrec needs ${MIN_TRACI_API} or newer`,
      );
    await client.setOrder(1);
    const sim = await client.subscribe('simulation', '', [
      VAR.TIME,
      VAR.DELTA_T,
      VAR.DEPARTED_VEHICLES_IDS,
      VAR.MIN_EXPECTED_VEHICLES,
      VAR.DEPARTED_PERSONS_IDS,
      VAR.ARRIVED_VEHICLES_IDS,
      VAR.ARRIVED_PERSONS_IDS,
      VAR.TELEPORT_STARTING_VEHICLES_IDS,
    ]);
    const dt = num(sim?.values.get(VAR.DELTA_T)) ?? stepLength ?? 1;
    const inFlightSteps = stepsInFlight(dt);

    const area = options.area ?? { kind: 'all' };
    // Steps come every few hundred microseconds; one fsync each would make SUMO wait on the disk.
    // Commits gather 200 ms of steps (the loop still waits for durability every 100 steps).
    recorder = await RunRecorder.begin(
      store,
      {
        simulator: { name: 'sumo', version: version.identifier.replace(/^SUMO\s*/, '') },
        description: `SUMO ${options.config ?? inputs.net}`,
        metadata: {
          config: options.config ?? null,
          net: inputs.net,
          routes: inputs.routes,
          stepLength: dt,
          traciApi: version.api,
          mode: area.kind === 'ego' ? 'ego tracking' : area.kind === 'local' ? 'local area' : 'all vehicles',
          ...(area.kind !== 'all' ? { radius: area.radius } : {}),
          ...(area.kind === 'local' ? { localPos: [area.x, area.y] } : {}),
          ...(options.ego ? { ego: options.ego } : {}),
        },
      },
      { commitIntervalMs: 200 },
    );
    const rec = recorder;
    await attachRoadNetwork(store, rec.id, network);

    const lights = await client.idList('trafficLight');
    if (lights.length) {
      await rec.declareActors(lights.map((id) => ({ id, kind: 'traffic_light' })));
      await rec.declareStreams(lights.map((id) => signalStream(id, { rateHz: 1 / dt })));
      for (const id of lights) await client.subscribe('trafficLight', id, LIGHT_VARS);
    }

    // Every vehicle and person on the road, each step, from one context subscription per domain
    // around a junction with a range that covers the network: a vehicle is in it from the step it
    // departs, with nothing to subscribe when it does, so steps can be sent ahead (see MAX_IN_FLIGHT).
    const junctions = await client.idList('junction');
    if (!junctions.length) throw invalid(`${inputs.net}: the network has no junction to subscribe around`);
    const { min, max } = network.boundary;
    const range = 2 * Math.hypot(max[0] - min[0], max[1] - min[1]) + 1000;
    await client.subscribeContext('junction', junctions[0]!, 'vehicle', range, VEHICLE_VARS);
    await client.subscribeContext('junction', junctions[0]!, 'person', range, PERSON_VARS);

    const declared = new Set<string>();
    const departedAttributes = new Map<string, JsonObject>();
    const shapes = new Map<string, { length: number; width: number }>();
    /** Each vehicle type's limits, size and class, by type id: asked once. */
    const types = new Map<string, Promise<Map<number, TraciValue>>>();
    /** Vehicles gone before their route and type could be asked (they lived less than the steps in flight). */
    const undescribed: string[] = [];
    const begin = rec.run.begin;
    let steps = 0;
    let persons = 0;
    let reason: EndReason = 'completed';
    // Appends not yet known durable, with when they were made: the loop waits only for those older
    // than a second (long committed unless the disk is behind), so SUMO never waits on the commit
    // timer, while a simulator far ahead of the disk is still slowed, not buffered without bound.
    // A step's appends share their commit's promise with the other steps of that commit, so each
    // promise is kept once, when first seen: an entry (and a Promise.all) per step held a second of
    // steps, about 3,000 on bigInter, alive through the recording thread's young collections.
    const unconfirmed: { at: number; durable: Promise<unknown> }[] = [];
    const confirm = (durable: Promise<unknown> | undefined, at: number): void => {
      if (durable === undefined || durable === unconfirmed.at(-1)?.durable) return;
      durable.catch(() => {}); // surfaced below, when its turn to be awaited comes
      unconfirmed.push({ at, durable });
    };
    // Steps are sent ahead only up to the end, so that SUMO simulates (and writes in its own outputs)
    // no step the run does not record: to its end time, whose last state begins one step before it,
    // or to --duration, whose last state begins at it.
    const stepsToEnd = simEnd === undefined ? Infinity : Math.round((simEnd - simBegin) / dt);
    const stepsToDuration = options.duration === undefined ? Infinity : Math.round(options.duration / dt) + 1;
    const maxSteps = Math.min(stepsToEnd, stepsToDuration);
    const lastStepReason: EndReason = stepsToDuration < stepsToEnd ? 'user_request' : 'completed';
    const warnings: string[] = [];
    const inFlight: Promise<SubscriptionResult[]>[] = [];
    let issued = 0;
    /** Steps answered, waiting (in order) for their new vehicles' route and type before being recorded. */
    const waiting: { results: SubscriptionResult[]; described: Promise<void>; settled: boolean }[] = [];

    /**
     * A step's departures: each new vehicle's route and type, and each new type's limits and size,
     * asked once. The questions go behind the steps already in flight and are answered after them.
     */
    const describe = async (results: SubscriptionResult[]): Promise<void> => {
      const simValues = results.find((r) => r.domain === 'simulation')?.values;
      const departed = (simValues?.get(VAR.DEPARTED_VEHICLES_IDS) as string[] | undefined) ?? [];
      persons += ((simValues?.get(VAR.DEPARTED_PERSONS_IDS) as string[] | undefined) ?? []).length;
      await Promise.all(
        departed.map(async (id) => {
          try {
            const once = await client.getMany('vehicle', id, VEHICLE_ONCE_VARS);
            const typeId = String(once.get(VAR.TYPE) ?? '');
            let type = types.get(typeId);
            if (!type) types.set(typeId, (type = client.getMany('vehicleType', typeId, TYPE_VARS)));
            const t = await type;
            shapes.set(id, { length: num(t.get(VAR.LENGTH)) ?? 4.5, width: num(t.get(VAR.WIDTH)) ?? 1.8 });
            departedAttributes.set(id, vehicleAttributes(once, t));
          } catch {
            // Gone before it was asked (or SUMO ended): recorded with what its states say.
            undescribed.push(id);
          }
        }),
      );
    };

    const scratch = new StepColumns();
    /** Records one step's states, lights, departures and arrivals; says whether the run ends here. */
    const record = async (results: SubscriptionResult[]): Promise<EndReason | undefined> => {
      steps++;
      const simValues = results.find((r) => r.domain === 'simulation')?.values;
      const now = num(simValues?.get(VAR.TIME)) ?? steps * dt;
      // The state after a step is the state of the step that began at now - dt (SUMO's fcd label).
      const t = begin + Math.round((now - dt) * 1e6);
      const step = Math.round((now - dt) / dt);
      // Every vehicle and person on the road into the step's columns (StepColumns.fill).
      const { lengths, widths, isPerson, typeIds } = scratch;
      scratch.fill(results, shapes);
      const lights = lightSignals(results, now, now - dt);
      const newActors: {
        id: string;
        kind: string;
        extents: { length: number; width: number; height: number };
        attributes: JsonObject;
      }[] = [];
      // The area: the rows kept, tagged as LimSim tags them; an actor is declared when first kept
      // (vehicles out of the area are declared when they enter it, long after they departed).
      scratch.keepArea(area, options.ego, (id, row) => {
        if (declared.has(id)) return;
        declared.add(id);
        newActors.push({
          id,
          kind: id === options.ego ? 'ego' : isPerson[row] ? 'pedestrian' : 'vehicle',
          extents: { length: lengths[row]!, width: widths[row]!, height: isPerson[row] ? 1.8 : 1.5 },
          attributes: departedAttributes.get(id) ?? { vType: String(typeIds[row] ?? '') },
        });
        departedAttributes.delete(id);
      });
      const ids = scratch.ids;
      // Known to the recorder at once, stored before this step's samples, not waited for here (each
      // departure's declarations were awaited for 12% of the time of recording bigInter).
      const declaring = newActors.length
        ? Promise.all([
            rec.declareActors(newActors),
            rec.declareStreams(
              newActors.map((a) => ({
                name: 'state',
                actor: a.id,
                fields: SUMO_STATE_FIELDS,
                rateHz: 1 / dt,
              })),
            ),
          ])
        : undefined;
      // Vehicles that arrived or began to teleport, and persons that finished, during this step: they
      // are gone from the state at t (a teleported vehicle comes back with its next state).
      // The set of this step's actors is made only at a step with arrivals (most steps have none).
      let present: Set<string> | undefined;
      for (const key of ARRIVAL_VARS)
        for (const id of (simValues?.get(key) as string[] | undefined) ?? [])
          if (declared.has(id) && !(present ??= new Set(ids)).has(id)) void rec.leave(id, t);
      // Durable every 100 steps: a simulator far ahead of the disk is slowed, not buffered without bound.
      const stateFrame =
        ids.length === 0
          ? undefined
          : rec.appendFrame('state', {
              t,
              step,
              actors: ids,
              columns: scratch.kept(ids.length),
            });
      const wall = performance.now();
      confirm(declaring, wall);
      confirm(stateFrame, wall);
      if (lights.actors.length)
        confirm(
          rec.appendFrame(SIGNAL_STREAM, { t, step, actors: lights.actors, columns: lights.columns }),
          wall,
        );
      while (unconfirmed.length && wall - unconfirmed[0]!.at > BACKLOG_MS) await unconfirmed.shift()!.durable;
      options.onStep?.(now - dt - simBegin, totalSeconds);
      if (num(simValues?.get(VAR.MIN_EXPECTED_VEHICLES)) === 0 && steps > 1) return 'completed';
      // As SUMO itself ends: its last state is the step that begins one step before the end.
      if (simEnd !== undefined && now >= simEnd - dt / 2) return 'completed';
      if (options.duration !== undefined && now - dt - simBegin >= options.duration) return 'user_request';
      return undefined;
    };

    let ended: EndReason | undefined;
    /** SUMO has answered its last step (it ended, or every step asked for was answered). */
    let answeredAll = false;
    while (ended === undefined) {
      if (options.signal?.aborted) {
        ended = 'user_request';
        break;
      }
      while (inFlight.length < inFlightSteps && issued < maxSteps) {
        const next = client.simulationStep();
        next.catch(() => {}); // a step sent past SUMO's end: its failure is read in its turn
        inFlight.push(next);
        issued++;
      }
      if (!inFlight.length) {
        answeredAll = true;
        break;
      }
      let results: SubscriptionResult[];
      try {
        results = await inFlight.shift()!;
      } catch (error) {
        // SUMO ends its simulation itself at its end time; anything else is a death mid-run.
        await sumoExitedWithin(2000);
        const exit = exited as { code: number | null } | null;
        if (exit?.code !== 0) {
          ended = 'interrupted';
          sumoError ||= (error as Error).message;
        }
        answeredAll = true;
        break;
      }
      const entry = { results, described: describe(results), settled: false };
      void entry.described.then(() => (entry.settled = true));
      waiting.push(entry);
      // Record, in order, every step whose new vehicles are described; never wait for the rest.
      while (ended === undefined && waiting.length && (waiting[0]!.settled || !inFlight.length)) {
        const head = waiting.shift()!;
        await head.described;
        ended = await record(head.results);
      }
    }
    // The steps SUMO answered before it ended (or before the last asked for) are recorded too.
    while (answeredAll && waiting.length && (ended === undefined || ended === 'interrupted')) {
      const head = waiting.shift()!;
      await head.described;
      const stop = await record(head.results);
      if (stop && ended === undefined) ended = stop;
      if (stop) break;
    }
    // Every step asked for was recorded (float times may fall a hair short of the end's test).
    reason = ended ?? (issued >= maxSteps ? lastStepReason : 'completed');
    if (undescribed.length) warnings.push(undescribedWarning(undescribed, inFlightSteps, dt));
    await client.close();
    await sumoExitedWithin(5000);
    if (reason === 'interrupted')
      await rec
        .attach({
          name: 'sumo/stderr.txt',
          mediaType: 'text/plain',
          data: Buffer.from(sumoError || 'SUMO closed the connection'),
        })
        .catch(() => {});
    const run = await rec.end(reason);
    if (options.ego !== undefined && !declared.has(options.ego))
      warnings.push(
        `--ego ${options.ego}: no vehicle of that id departed in the ${((run.end! - run.begin) / 1e6).toFixed(1)} s recorded, so the run has no ego${area.kind === 'ego' ? ' and, with --area ego, no vehicles' : ''}; check the id in the route files`,
      );
    return {
      run,
      steps,
      vehicles: [...declared].length - persons,
      persons,
      trafficLights: lights.length,
      vehicleTypes: types.size,
      warnings,
    };
  } catch (error) {
    // SUMO may accept the connection and then refuse its inputs: its own message says why.
    if (!recorder) await sumoExitedWithin(2000);
    await client.close().catch(() => {});
    sumo.kill('SIGKILL');
    if (recorder) await recorder.end('inner_error').catch(() => {});
    throw (!recorder && failedToStart()) || error;
  } finally {
    if (!exited) sumo.kill('SIGKILL');
  }
}

/**
 * Vehicles that arrived before simrec's questions about them reached SUMO, said in SUMO's words: what
 * is missing (route, vType, speedFactor, the type's size), how soon they arrived, and what helps.
 */
function undescribedWarning(ids: readonly string[], inFlightSteps: number, dt: number): string {
  const named = ids.slice(0, 5).join(', ') + (ids.length > 5 ? ` and ${ids.length - 5} more` : '');
  const [who, their] =
    ids.length === 1 ? [`vehicle ${named}`, 'its'] : [`${ids.length} vehicles (${named})`, 'their'];
  const seconds = Number((inFlightSteps * dt).toFixed(3));
  return (
    `${who} arrived within ${inFlightSteps} steps (${seconds} s) of departing, before simrec asked SUMO for ${their} route and vType: ` +
    `recorded without route, vType and speedFactor, as 4.5 m long and 1.8 m wide (simrec's questions reach SUMO up to ${inFlightSteps} steps late; a shorter --step-length makes that less simulated time)`
  );
}

/**
 * The vType, and for a vehicle seen departing its route, its own speed factor, its type's limits and
 * its class (a person has none of them).
 */
function vehicleAttributes(
  values: ReadonlyMap<number, TraciValue>,
  type?: ReadonlyMap<number, TraciValue>,
): JsonObject {
  const attributes: JsonObject = { vType: String(values.get(VAR.TYPE) ?? '') };
  const route = values.get(VAR.EDGES);
  if (Array.isArray(route)) attributes.route = route.map(String);
  const speedFactor = num(values.get(VAR.SPEED_FACTOR));
  if (speedFactor !== undefined) attributes.speedFactor = speedFactor;
  for (const [name, id] of [
    ['maxAccel', VAR.ACCEL],
    ['maxDecel', VAR.DECEL],
    ['maxSpeed', VAR.MAXSPEED],
  ] as const) {
    const v = num(type?.get(id));
    if (v !== undefined) attributes[name] = v;
  }
  const vClass = type?.get(VAR.VEHICLECLASS);
  if (typeof vClass === 'string') attributes.vClass = vClass;
  return attributes;
}
