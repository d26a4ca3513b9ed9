import { basename } from 'node:path';
import type { JsonObject } from '../model/json.js';
import type { RoadLane, RoadNetwork } from '../model/roadnet.js';
import type { ActorDecl, RunInfo } from '../model/run.js';
import type { FrameInput } from '../model/columns.js';
import {
  CONTROL_STREAM,
  controlStream,
  SIGNAL_STREAM,
  signalStream,
  STATE_STREAM,
  stateStream,
  WHEELS_STREAM,
  wheelsStream,
} from '../model/standard-streams.js';
import type { StoreBackend } from '../model/store-port.js';
import type { StreamDecl } from '../model/stream.js';
import { MICROS_PER_SECOND } from '../model/units.js';
import { removeFailedRun } from '../record/failed-run.js';
import { RunRecorder } from '../record/run-recorder.js';
import { readRoadNetwork, readRoadNetworkFile } from '../roadnet/read-roadnet.js';
import { attachRoadNetwork } from '../roadnet/roadnet-attachment.js';
import { EGO_CAR, EgoDynamics } from './ego-dynamics.js';
import { Random } from './random.js';
import { readRouteFiles } from './route-files.js';
import { generateTownNetwork } from './town-network.js';
import { TrafficSimulation, type Vehicle } from './traffic-simulation.js';

export interface DemoRunOptions {
  /** A SUMO .net.xml or OpenDRIVE file; without it, the generated town (`generateTownNetwork`). */
  net?: string;
  /** SUMO route files; without them, traffic is generated. */
  routes?: string[];
  /** Simulated seconds (default 60). */
  duration?: number;
  /** Recorded samples per simulated second (default 10). */
  rateHz?: number;
  /** Generated traffic: vehicles besides the ego driving at once (default 30). */
  vehicles?: number;
  /** Pedestrians, where the network has sidewalks (default 16). */
  pedestrians?: number;
  seed?: number;
  /** Called after each simulated second with the fraction done. */
  onProgress?: (fraction: number) => void;
  /** Problems worked around (skipped vehicles, unknown types...), as they are found. */
  onWarning?: (message: string) => void;
  /**
   * Stops the recording early (Ctrl-C): the run ends `user_request` with the steps recorded so far,
   * all of them durable. Checked at the simulation's checkpoints, every ten simulated seconds.
   */
  signal?: AbortSignal;
}

export interface DemoRunResult {
  run: RunInfo;
  warnings: string[];
  /** The recording was stopped by `signal` before its duration. */
  stopped: boolean;
  /** Simulated seconds recorded (the duration, unless stopped). */
  simulated: number;
  /** Actors that took part. */
  vehicles: number;
  pedestrians: number;
  trafficLights: number;
}

export const DEMO_SIMULATOR = { name: 'simrec-demo', version: '0.2.0' } as const;
export const DEFAULT_NETWORK_NAME = 'simrec-town.net.xml';
/** The traffic model's own step never exceeds this, whatever the recording rate. */
const MAX_STEP = 0.1;

/** Where the simulation loop hands its output: a RunRecorder, or nothing (the benchmark's "recording off"). */
interface DemoSink {
  declareActors(decls: ActorDecl[]): Promise<unknown>;
  declareStreams(decls: StreamDecl[]): Promise<unknown>;
  appendFrame(name: string, frame: FrameInput): Promise<void>;
  leave(actor: string, t: number): Promise<void>;
  flush(): Promise<void>;
}

/** A demo ready to drive: the network read, the traffic placed, the recording's metadata. */
interface PreparedDemo {
  network: RoadNetwork;
  netName: string;
  sim: TrafficSimulation;
  metadata: JsonObject;
  warnings: string[];
  warn: (message: string) => void;
  duration: number;
  rateHz: number;
  substeps: number;
}

async function prepareDemo(options: DemoRunOptions): Promise<PreparedDemo> {
  const duration = options.duration ?? 60;
  const rateHz = options.rateHz ?? 10;
  const seed = options.seed ?? 1;
  const warnings: string[] = [];
  const warn = (message: string): void => {
    warnings.push(message);
    options.onWarning?.(message);
  };
  const read = options.net
    ? await readRoadNetworkFile(options.net)
    : readRoadNetwork(generateTownNetwork(), { file: DEFAULT_NETWORK_NAME });
  read.warnings.forEach(warn);
  const network = read.network;
  const random = new Random(seed);
  const demand = options.routes?.length
    ? await readRouteFiles(options.routes, { until: duration, random: random.fork('routes') })
    : undefined;
  demand?.warnings.forEach(warn);
  const substeps = Math.max(1, Math.ceil(1 / (rateHz * MAX_STEP) - 1e-9));
  const dt = 1 / (rateHz * substeps);
  const sim = new TrafficSimulation(network, {
    dt,
    random,
    ...(demand ? { demand: demand.vehicles } : {}),
    vehicles: Math.round(options.vehicles ?? 30),
    pedestrians: Math.round(options.pedestrians ?? 16),
    warn,
  });
  const netName = options.net ? basename(options.net) : DEFAULT_NETWORK_NAME;
  const metadata: JsonObject = { network: netName, seed, rateHz, duration, stepLength: dt };
  if (options.routes?.length) metadata.routes = options.routes.map((r) => basename(r));
  else metadata.vehicles = options.vehicles ?? 30;
  return { network, netName, sim, metadata, warnings, warn, duration, rateHz, substeps };
}

/**
 * Records a demo run: a traffic simulation on a road network, through the same recording API a
 * simulator uses. The network is attached to the run; each traffic light is an actor with a `signal`
 * stream; the ego has `state`, `control` and `wheels`; other vehicles and pedestrians have `state`.
 */
export async function recordDemoRun(
  store: StoreBackend,
  options: DemoRunOptions = {},
): Promise<DemoRunResult> {
  const demo = await prepareDemo(options);
  const recorder = await RunRecorder.begin(store, {
    simulator: { ...DEMO_SIMULATOR },
    description: `simrec demo traffic on ${demo.netName}${options.routes?.length ? ` with ${demo.metadata.routes!.toString()}` : ''}`,
    metadata: demo.metadata,
  });
  try {
    await attachRoadNetwork(store, recorder.id, demo.network);
    const { participants, simulated, stopped } = await driveTraffic(
      demo,
      recorder,
      recorder.run.begin,
      options.onProgress,
      options.signal,
    );
    const run = await recorder.end(stopped ? 'user_request' : 'scenario_stop_trigger');
    return {
      run,
      warnings: demo.warnings,
      stopped,
      simulated,
      vehicles: participants,
      pedestrians: demo.sim.pedestrians.walkers.length,
      trafficLights: demo.sim.lights.length,
    };
  } catch (error) {
    // Ended so that it can be removed: removeFailedRun says when the run could not be.
    await recorder.end('inner_error').catch(() => {});
    throw await removeFailedRun(store, recorder.id, error);
  }
}

/**
 * The demo's traffic with recording off: every sample is built as for a recording and then dropped.
 * The benchmark sets this beside `recordDemoRun` to show what recording costs the simulation.
 */
export async function simulateDemoTraffic(
  options: DemoRunOptions = {},
): Promise<{ actorSteps: number; warnings: string[] }> {
  const demo = await prepareDemo(options);
  const discard: DemoSink = {
    declareActors: async () => {},
    declareStreams: async () => {},
    appendFrame: async () => {},
    leave: async () => {},
    flush: async () => {},
  };
  const { actorSteps } = await driveTraffic(demo, discard, 0, options.onProgress);
  return { actorSteps, warnings: demo.warnings };
}

/** Steps the simulation for the demo's duration, handing every actor's samples to `sink` at each step. */
async function driveTraffic(
  demo: PreparedDemo,
  sink: DemoSink,
  begin: number,
  onProgress: ((fraction: number) => void) | undefined,
  signal?: AbortSignal,
): Promise<{ participants: number; actorSteps: number; simulated: number; stopped: boolean }> {
  const { sim, warn, rateHz, substeps, duration } = demo;
  const lightIds = sim.lights.map((l) => l.id);
  const pedestrianIds = new Set(sim.pedestrians.walkers.map((p) => p.id));
  await sink.declareActors([
    ...sim.lights.map((l): ActorDecl => ({ id: l.id, kind: 'traffic_light', sourceClass: 'sumo.tlLogic' })),
    ...sim.pedestrians.walkers.map((p): ActorDecl => ({
      id: p.id,
      kind: 'pedestrian',
      sourceClass: 'demo.walker',
      extents: { length: 0.3, width: 0.5, height: 1.75 },
      attributes: { speed: round(p.speed) },
    })),
  ]);
  await sink.declareStreams([
    ...sim.lights.map((l) => signalStream(l.id, { rateHz })),
    ...sim.pedestrians.walkers.map((p) => stateStream(p.id, { rateHz })),
  ]);
  // Vehicle ids come from route files; one that names a light or pedestrian is recorded under another id.
  const actorIds = new Map<Vehicle, string>();
  const declared = new Set<string>([...lightIds, ...pedestrianIds]);
  const declareVehicles = async (vehicles: Vehicle[]): Promise<void> => {
    if (vehicles.length === 0) return;
    const decls: ActorDecl[] = [];
    const streams: StreamDecl[] = [];
    for (const v of vehicles) {
      let id = v.id;
      while (declared.has(id)) id = `${id}#vehicle`;
      if (id !== v.id)
        warn(
          `vehicle ${JSON.stringify(v.id)} is recorded as ${JSON.stringify(id)}: its id names another actor`,
        );
      declared.add(id);
      actorIds.set(v, id);
      decls.push(vehicleActor(v, id, (lane) => sim.graph.lanes.get(lane)!.lane));
      streams.push(stateStream(id, { rateHz }));
      if (v.ego) streams.push(controlStream(id, { rateHz }), wheelsStream(id, { rateHz }));
    }
    // Known to the recorder at once, stored in order with the samples (RunRecorder.declareActors).
    await Promise.all([sink.declareActors(decls), sink.declareStreams(streams)]);
  };
  await declareVehicles(sim.vehicles);

  const ego = new EgoDynamics();
  const steps = Math.round(duration * rateHz);
  let participants = sim.vehicles.length;
  let actorSteps = 0;
  let checkpoint: Promise<void> = Promise.resolve();
  let departures: Promise<void> = Promise.resolve();
  /**
   * The first write that failed: a step's writes are awaited only at the checkpoints, and one that fails
   * between them (a full disk) is met at the next step, not left to end the process as a rejection
   * nobody awaited.
   */
  const failure: { failed: boolean; error?: unknown } = { failed: false };
  // Kept from step to step: appendFrame copies a frame's values before it returns.
  const egos = new EgoColumns();
  const signals = {
    state: new Array<string>(lightIds.length),
    phase: new Float64Array(lightIds.length),
    program: new Array<string>(lightIds.length),
    timeToSwitch: new Float64Array(lightIds.length),
  };
  for (let step = 0; step <= steps; step++) {
    if (failure.failed) throw failure.error;
    const t = begin + Math.round((step / rateHz) * MICROS_PER_SECOND);
    if (step > 0) {
      const departed: Vehicle[] = [];
      const arrivals: Promise<void>[] = [];
      for (let k = 0; k < substeps; k++) {
        sim.step();
        departed.push(...sim.departed);
        // Gone at the step it reached the end of its route, not left standing at the network's exit.
        const at = Math.min(t, begin + Math.round(sim.time * MICROS_PER_SECOND));
        for (const v of sim.arrived) {
          const id = actorIds.get(v);
          if (id !== undefined) arrivals.push(sink.leave(id, at));
        }
      }
      // Durable with the frame below, in the same commit: the frame's promise reports a failure, awaited at
      // the checkpoints like the samples.
      void Promise.all(arrivals).catch(() => {});
      // A vehicle that came and went within one recording interval is never seen.
      const present = departed.filter((v) => sim.vehicles.includes(v));
      participants += present.length;
      // Not awaited here: a wait would let the store start a commit at every departure (a commit costs
      // this thread the same whatever its size). Its failure fails this step's durable promise.
      departures = declareVehicles(present);
    }
    // Every vehicle's and pedestrian's state as one frame of columns (RunRecorder.appendFrame): no
    // sample object per actor. NaN and undefined mark what an actor does not have (a pedestrian's
    // acceleration, a non-ego vehicle's roll): the sample read back has no such field.
    const walkers = sim.pedestrians.walkers;
    const rows = sim.vehicles.length + walkers.length;
    const states = stateColumns(rows);
    const actors: string[] = [];
    egos.clear();
    for (const v of sim.vehicles) {
      const id = actorIds.get(v)!;
      const row = actors.push(id) - 1;
      states.x[row] = round(v.x);
      states.y[row] = round(v.y);
      states.yaw[row] = v.yaw;
      states.speed[row] = v.speed;
      states.vx[row] = v.speed * Math.cos(v.yaw);
      states.vy[row] = v.speed * Math.sin(v.yaw);
      states.accel[row] = v.accel;
      states.wz[row] = v.yawRate;
      states.lane[row] = v.lane;
      states.lanePos[row] = v.lanePos;
      if (v.ego) {
        const details = ego.update(
          { speed: v.speed, accel: v.accel, yaw: v.yaw, yawRate: v.yawRate, curvature: v.curvature },
          step === 0 ? 0 : 1 / rateHz,
        );
        states.z[row] = 0;
        states.roll[row] = details.roll;
        states.pitch[row] = details.pitch;
        states.vz[row] = 0;
        states.ax[row] = details.ax;
        states.ay[row] = details.ay;
        states.az[row] = 0;
        states.wx[row] = details.wx;
        states.wy[row] = details.wy;
        egos.actors.push(id);
        const c = details.control;
        egos.control.throttle.push(c.throttle);
        egos.control.brake.push(c.brake);
        egos.control.steer.push(c.steer);
        egos.control.gear.push(c.gear);
        egos.control.handbrake.push(c.handbrake);
        egos.wheels.wheels.push(details.wheels);
      }
    }
    for (const p of walkers) {
      const on = sim.pedestrians.laneOf(p);
      const row = actors.push(p.id) - 1;
      states.x[row] = round(p.x);
      states.y[row] = round(p.y);
      states.yaw[row] = p.yaw;
      states.speed[row] = step === 0 ? 0 : (p.moved * rateHz) / substeps;
      states.lane[row] = on.lane;
      states.lanePos[row] = on.lanePos;
    }
    // The lights' signals as a frame of their own: columns, as the states are, not a sample object each.
    lightIds.forEach((id, row) => {
      const s = sim.signals.get(id)!;
      signals.state[row] = s.state;
      signals.phase[row] = s.phase;
      signals.program[row] = s.program;
      signals.timeToSwitch[row] = s.timeToSwitch;
    });
    actorSteps += sim.vehicles.length + sim.pedestrians.walkers.length + sim.lights.length;
    const durable = Promise.all([
      sink.appendFrame(STATE_STREAM, { t, step, actors, columns: states }),
      lightIds.length
        ? sink.appendFrame(SIGNAL_STREAM, { t, step, actors: lightIds, columns: signals })
        : undefined,
      egos.actors.length
        ? sink.appendFrame(CONTROL_STREAM, { t, step, actors: egos.actors, columns: egos.control })
        : undefined,
      egos.actors.length
        ? sink.appendFrame(WHEELS_STREAM, { t, step, actors: egos.actors, columns: egos.wheels })
        : undefined,
      departures,
    ]).then(() => {});
    durable.catch((error: unknown) => {
      if (failure.failed) return;
      failure.failed = true;
      failure.error = error;
    });
    departures = Promise.resolve();
    const perSecond = Math.max(1, Math.round(rateHz));
    if (step % perSecond === 0) onProgress?.(step / steps);
    // Every ten simulated seconds a checkpoint, to bound what is held in memory: the simulation waits
    // for the previous one to be durable, not this one, so it goes on while the store commits (waiting
    // for each checkpoint's own fsync cost the demo a third of its speed; every second, half).
    if (step % (perSecond * 10) === 0) {
      await checkpoint;
      checkpoint = durable;
      // Handed to the store now: a commit starts when this thread next yields, which a loop that only
      // waits here does not do until the next checkpoint, where it would then wait for all of it. A failed
      // commit fails the frames in it, which `durable` reports.
      void sink.flush().catch(() => {});
      // Asked to stop (this await is where a signal can arrive): the run ends here, every step durable.
      if (signal?.aborted && step < steps) {
        await Promise.all([checkpoint, durable]);
        return { participants, actorSteps, simulated: step / rateHz, stopped: true };
      }
    }
    if (step === steps) await Promise.all([checkpoint, durable]);
  }
  for (const d of sim.waiting)
    warn(
      `${d.where}: vehicle ${JSON.stringify(d.id)} could not depart by the end (no room on its first lane)`,
    );
  return { participants, actorSteps, simulated: steps / rateHz, stopped: false };
}

/** The control and wheels columns of a step's egos (one row each), filled as they are met. */
class EgoColumns {
  readonly actors: string[] = [];
  readonly control = {
    throttle: [] as number[],
    brake: [] as number[],
    steer: [] as number[],
    gear: [] as number[],
    handbrake: [] as boolean[],
  };
  readonly wheels = { wheels: [] as unknown[] };

  clear(): void {
    this.actors.length = 0;
    for (const column of Object.values(this.control)) column.length = 0;
    this.wheels.wheels.length = 0;
  }
}

/** The state columns of a frame of `rows` actors, every value absent (NaN, undefined) until set. */
function stateColumns(rows: number) {
  const absent = (): Float64Array => new Float64Array(rows).fill(NaN);
  return {
    x: absent(),
    y: absent(),
    z: absent(),
    roll: absent(),
    pitch: absent(),
    yaw: absent(),
    speed: absent(),
    vx: absent(),
    vy: absent(),
    vz: absent(),
    accel: absent(),
    ax: absent(),
    ay: absent(),
    az: absent(),
    wx: absent(),
    wy: absent(),
    wz: absent(),
    lane: new Array<string | undefined>(rows),
    lanePos: absent(),
  };
}

// Positions to the millimetre's thousandth: the noise bits below say nothing and cost space.
const round = (v: number): number => Math.round(v * 1e6) / 1e6;

function vehicleActor(v: Vehicle, id: string, laneOf: (id: string) => RoadLane): ActorDecl {
  const t = v.type;
  const attributes: JsonObject = {
    vType: t.id,
    vClass: t.vClass,
    maxSpeed: t.maxSpeed,
    accel: t.accel,
    decel: t.decel,
    minGap: t.minGap,
    speedFactor: round(v.speedFactor),
    route: v.path
      .map(laneOf)
      .filter((l) => l.function === 'normal')
      .map((l) => l.edge),
  };
  if (v.ego)
    Object.assign(attributes, {
      mass: EGO_CAR.mass,
      wheels: 4,
      wheelRadius: EGO_CAR.wheelRadius,
      wheelbase: EGO_CAR.wheelbase,
      track: EGO_CAR.track,
      drive: 'front',
    });
  return {
    id,
    kind: v.ego ? 'ego' : t.vClass === 'bicycle' ? 'cyclist' : 'vehicle',
    sourceClass: v.ego ? 'vehicle.demo.sedan' : `sumo.${t.vClass}`,
    extents: { length: t.length, width: t.width, height: t.height },
    attributes,
  };
}
