import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import type { JsonObject } from '../../model/json.js';
import type { RoadNetwork } from '../../model/roadnet.js';
import { presenceAt, type ActorInfo, type PresenceInterval, type RunInfo } from '../../model/run.js';
import type { RunSource } from '../../model/run-ports.js';
import { readStreamSamples } from '../../model/sample-series.js';
import type { Sample, StreamInfo } from '../../model/stream.js';
import { readRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { LimSimLanes } from '../../roadnet/limsim/limsim-geometry.js';
import { LaneIndex } from '../../roadnet/spatial-index.js';
import { formatNetBoundary, formatRoute, formatStartTime, parseStartTime } from './limsim-encodings.js';
import { onFrameGrid, type FrameSample } from './limsim-frames.js';
import { limSimRowsFromNetwork } from './limsim-network-tables.js';
import { LeftOut } from '../common/left-out.js';
import {
  createTableSql,
  LIMSIM_EXTRA_INDEXES,
  LIMSIM_TABLES,
  type LimSimTableName,
} from './limsim-schema.js';
import {
  EVALUATION_COLUMNS,
  EVALUATION_STREAM,
  FRAME_MICROS,
  LIMSIM_EVALUATION_STREAM,
  limSimYaw,
  SIGNAL_STREAM,
} from './limsim-streams.js';

/** The temporary table frameINFO's rows gather in, a vehicle at a time (exportLimSim). */
const FRAMES_BY_VEHICLE = 'frameINFO_by_vehicle';

export interface LimSimExportOptions {
  warn?: (message: string) => void;
  /** Samples written so far of all samples to write. */
  onProgress?: (done: number, total: number) => void;
  /**
   * The ego's evaluation in LimSim's mode (samples with LimSim's five raw metrics), asked for when the
   * run has none stored: LimSim's recorder always fills evaluationINFO, and its report reads it.
   */
  evaluate?: () => Promise<Sample[]>;
}

export interface LimSimExportResult {
  file: string;
  /** Rows written, by table. */
  rows: Record<string, number>;
  /** The streams that were not on LimSim's 0.1 s grid and were resampled onto it. */
  resampled: string[];
  /** Where evaluationINFO came from: the run's stored evaluation, one computed for the export, or none. */
  evaluation: 'stored' | 'computed' | 'none';
}

type Row = Record<string, string | number | null>;

/** LimSim's AoI: vehicles within 50 m of the ego are in it, those further out are `outOfAoI`. */
const AOI_RADIUS = 50;
// LimSim records vehicles only (its interactive replay plans for every row, and a walker has no route).
const NOT_VEHICLES = new Set(['traffic_light', 'sensor', 'map', 'static', 'pedestrian']);
const OBSTACLE_TABLES: Record<string, LimSimTableName> = {
  'limsim.circleObs': 'circleObsINFO',
  'limsim.rectangleObs': 'rectangleObsINFO',
};
const DEFAULT_EXTENTS = { length: 4.5, width: 1.8 };
/** The fields of a vehicle's state that frameINFO's columns are filled from (vehicleFrames). */
const FRAME_FIELDS = ['x', 'y', 'yaw', 'yawTurns', 'speed', 'accel', 'lane', 'lanePos', 'vtag', 'routeIdx'];
/** The fields of a light's signal that trafficLightStates' columns are filled from (lightRows). */
const LIGHT_FIELDS = ['state', 'nextPhase', 'phase', 'program', 'switchTime', 'timeToSwitch'];
/**
 * SUMO's default vType (passenger): what LimSim reads from traci.vehicletype when the route files
 * declare no vType. Its planner negates maxDecel, so the columns cannot be NULL.
 */
const SUMO_DEFAULT_LIMITS = { maxAccel: 2.6, maxDecel: 4.5, maxSpeed: 200 / 3.6 };

/**
 * Writes a run as a LimSim database that LimSim's replay opens: LimSim master's exact schema, frames
 * on its 0.1 s grid counted from the run's begin, centre positions, LimSim's yaw, lanes and routes,
 * the network tables and geohash grid from the run's road network, traffic-light rows and, when the
 * run has been evaluated, evaluationINFO. It writes `file` afresh (the caller gives a new path and
 * renames it when complete: replay/export-run.ts).
 */
export async function exportLimSim(
  source: RunSource,
  file: string,
  options: LimSimExportOptions = {},
): Promise<LimSimExportResult> {
  const warn = options.warn ?? (() => {});
  const { run } = source;
  const runId = run.id;
  const [actors, streams] = await Promise.all([source.actors(), source.streams()]);
  const network = await readRoadNetwork(source, runId);
  const byId = new Map(streams.map((s) => [s.id, s]));
  const egos = actors.filter((a) => a.kind === 'ego' && byId.has(`${a.id}/state`));
  if (egos.length > 1) warn(`${egos.length} egos; LimSim has one: ${egos[0]!.id} is written as the ego`);
  const ego = egos[0];
  if (!ego) warn(`no ego with states: simINFO.egoID is empty, which LimSim's replay refuses`);
  const vehicles = actors.filter((a) => !NOT_VEHICLES.has(a.kind) && byId.has(`${a.id}/state`));
  const pedestrians = actors.filter((a) => a.kind === 'pedestrian' && byId.has(`${a.id}/state`));
  const walkers = pedestrians.length;
  if (walkers) warn(`${walkers} pedestrians left out: LimSim records vehicles only`);
  // Every stream and field not written is said (below), the pedestrians' by the line above.
  const leftOut = new LeftOut();
  const walkerIds = new Set(pedestrians.map((a) => a.id));
  const said = new Set(streams.filter((s) => s.actor !== null && walkerIds.has(s.actor)).map((s) => s.id));
  const origin = frameOrigin(run);
  const lights = actors.filter((a) => a.kind === 'traffic_light' && signalStream(a, byId));
  const total = [
    ...vehicles.map((a) => byId.get(`${a.id}/state`)!),
    ...lights.map((a) => signalStream(a, byId)!),
  ].reduce((n, s) => n + s.samples, 0);
  let done = 0;
  const resampled: string[] = [];
  const read = async (
    stream: StreamInfo,
    angles: ReadonlySet<string>,
    presence?: readonly PresenceInterval[],
  ): Promise<FrameSample[]> => {
    const samples = await readStreamSamples(source, stream);
    for (const sample of samples) leftOut.saw(stream, sample);
    const { frames, resampled: moved } = onFrameGrid(samples, origin, angles);
    if (moved) resampled.push(stream.id);
    done += samples.length;
    options.onProgress?.(done, total);
    const early = frames.findIndex((f) => f.frame >= 0);
    if (early > 0 || (early === -1 && frames.length))
      warn(`${stream.id}: samples before the run's begin have no LimSim frame; left out`);
    const onRun = early === -1 ? [] : frames.slice(early);
    // A vehicle is in frameINFO only at frames where it is present (LimSim's own rule, read back by
    // the importer); a recording without presence keeps every frame of its samples.
    return presence?.length
      ? onRun.filter((f) => presenceAt(presence, origin + f.frame * FRAME_MICROS) !== undefined)
      : onRun;
  };

  rmSync(file, { force: true });
  const db = new Database(file);
  const rows: Record<string, number> = {};
  let evaluation: LimSimExportResult['evaluation'] = 'none';
  try {
    for (const table of LIMSIM_TABLES) db.exec(createTableSql(table));
    // frameINFO's rows come a vehicle at a time, but its primary key is (frame, vid): inserted so, each
    // row lands somewhere else in the key's B-tree, which outgrows SQLite's cache on a long run
    // (performance-history.md, "A big run's exports"). They gather in a temporary table, which has no
    // key, and are copied over in the key's order at the end: appended frame after frame, as LimSim
    // writes them.
    db.pragma('temp_store = FILE');
    db.exec(`CREATE TEMP TABLE ${FRAMES_BY_VEHICLE} AS SELECT * FROM main.frameINFO WHERE 0`);
    const insert = (table: LimSimTableName, values: Row[]): void => {
      const columns = LIMSIM_TABLES.find((t) => t.name === table)!.columns.map((c) => c.name);
      const into = table === 'frameINFO' ? `temp.${FRAMES_BY_VEHICLE}` : table;
      const statement = db.prepare(
        `INSERT INTO ${into} (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
      );
      db.transaction(() => {
        for (const row of values) statement.run(columns.map((c) => row[c] ?? null));
      })();
      rows[table] = (rows[table] ?? 0) + values.length;
    };

    const egoFrames = ego ? await read(byId.get(`${ego.id}/state`)!, YAW, ego.presence) : [];
    const egoAt = new Map(egoFrames.map((f) => [f.frame, f.sample]));
    const locator = new LaneLocator(network);
    const defaulted: string[] = [];
    for (const actor of vehicles) {
      leftOut.fields(byId.get(`${actor.id}/state`)!, FRAME_FIELDS);
      const frames =
        actor === ego ? egoFrames : await read(byId.get(`${actor.id}/state`)!, YAW, actor.presence);
      const { frameRows, route } = vehicleFrames(actor, frames, ego, egoAt, locator);
      insert('frameINFO', frameRows);
      insert('vehicleINFO', [vehicleRow(actor, route, warn, defaulted)]);
    }
    db.transaction(() => {
      db.exec(`INSERT INTO main.frameINFO SELECT * FROM temp.${FRAMES_BY_VEHICLE} ORDER BY frame, vid`);
      db.exec(`DROP TABLE temp.${FRAMES_BY_VEHICLE}`);
      for (const index of LIMSIM_EXTRA_INDEXES) db.exec(index);
    })();
    if (defaulted.length)
      warn(
        `${defaulted.length} vehicles (${defaulted.slice(0, 3).join(', ')}${defaulted.length > 3 ? ', ...' : ''}) have no accel, decel or max speed: vehicleINFO gets SUMO's default vType's (${SUMO_DEFAULT_LIMITS.maxAccel}, ${SUMO_DEFAULT_LIMITS.maxDecel}, ${SUMO_DEFAULT_LIMITS.maxSpeed.toFixed(2)})`,
      );
    if (locator.missed)
      warn(
        `${locator.missed} frames have no lane: laneID is written empty (no lane within 10 m of the vehicle)`,
      );
    for (const light of lights) {
      leftOut.fields(signalStream(light, byId)!, LIGHT_FIELDS);
      insert('trafficLightStates', lightRows(light, await read(signalStream(light, byId)!, NONE), network));
    }
    // An empty one (a LimSim file whose evaluationINFO was empty) is as good as none.
    const found = evaluationStream(ego, byId);
    const stored = found && found.samples > 0 ? found : undefined;
    if (stored) {
      leftOut.fields(stored, EVALUATION_COLUMNS);
      insert('evaluationINFO', evaluationRows(await read(stored, NONE)));
      evaluation = 'stored';
    } else if (ego && options.evaluate) {
      const computed = onFrameGrid(await options.evaluate(), origin, NONE).frames;
      insert('evaluationINFO', evaluationRows(computed.filter((f) => f.frame >= 0)));
      evaluation = 'computed';
    }
    insert('simINFO', [simRow(run, ego, network)]);
    for (const actor of actors) {
      const table = OBSTACLE_TABLES[actor.sourceClass ?? ''];
      if (table) insert(table, [{ ...(actor.attributes as Row), id: actor.id }]);
    }
    if (network) {
      const { rows: tables, warnings } = limSimRowsFromNetwork(network);
      warnings.forEach(warn);
      for (const table of [
        'edgeINFO',
        'laneINFO',
        'junctionLaneINFO',
        'junctionINFO',
        'tlLogicINFO',
        'connectionINFO',
        'geohashINFO',
      ] as const)
        insert(table, tables[table] as unknown as Row[]);
    } else warn(`no road network: the network tables are empty, and LimSim's replay needs them`);
    leftOut.warn(
      streams,
      warn,
      () => "LimSim's database has no table for it",
      (name) =>
        name === SIGNAL_STREAM
          ? "trafficLightStates holds a light's state, next phase and switch time only"
          : stored && name === stored.name
            ? "evaluationINFO holds LimSim's five metrics only"
            : 'frameINFO holds x, y, yaw, speed, accel, lane, lane position, route index and tag only',
      said,
    );
    const files = (await source.attachments()).filter((a) => !a.name.startsWith('roadnet/'));
    if (files.length)
      warn(
        `${files.length} attachments left out (${files
          .slice(0, 3)
          .map((a) => a.name)
          .join(', ')}${files.length > 3 ? ', ...' : ''}): LimSim's database holds no files`,
      );
    db.close();
  } catch (error) {
    if (db.open) db.close();
    rmSync(file, { force: true });
    throw error;
  }
  return { file, rows, resampled, evaluation };
}

/**
 * Where frame 0 lies. LimSim numbers a frame by the simulationStep() calls made so far: the state after
 * the first step is frame 1, at SUMO time 0.1 s. simrec's SUMO recorder labels that state with the
 * time its step began (0 s, as SUMO's own outputs do), so a SUMO run's frames count from one step
 * before its begin. Other runs (LimSim's own, the demo, other simulators) have frame 0 at their begin.
 */
function frameOrigin(run: RunInfo): number {
  const stepLength = run.metadata.stepLength;
  if (run.simulator.name === 'sumo' && typeof stepLength === 'number' && stepLength > 0)
    return run.begin - Math.round(stepLength * 1e6);
  return run.begin;
}

const YAW = new Set(['yaw']);
const NONE = new Set<string>();

function signalStream(actor: ActorInfo, byId: Map<string, StreamInfo>): StreamInfo | undefined {
  const own = [...byId.values()].filter(
    (s) => s.actor === actor.id && s.fields.some((f) => f.name === 'state'),
  );
  return own.find((s) => s.name === SIGNAL_STREAM) ?? own[0];
}

function evaluationStream(ego: ActorInfo | undefined, byId: Map<string, StreamInfo>): StreamInfo | undefined {
  const names = [EVALUATION_STREAM, LIMSIM_EVALUATION_STREAM];
  if (ego) for (const name of names) if (byId.has(`${ego.id}/${name}`)) return byId.get(`${ego.id}/${name}`);
  return byId.get(LIMSIM_EVALUATION_STREAM);
}

/**
 * Lanes as LimSim names them: for vehicles whose samples carry none, from the road network; and a
 * junction crossing as the one internal lane LimSim knows for it.
 */
class LaneLocator {
  private index: LaneIndex | undefined;
  private geometry: LimSimLanes | undefined;
  private readonly network: RoadNetwork | undefined;
  readonly edgeOf = new Map<string, string>();
  /** Each internal lane of a crossing: the crossing's first internal lane, and the length before it. */
  private readonly crossing = new Map<string, { lane: string; before: number }>();
  missed = 0;
  constructor(network: RoadNetwork | undefined) {
    this.network = network;
    for (const lane of network?.lanes ?? [])
      if (lane.function === 'normal') this.edgeOf.set(lane.id, lane.edge);
    if (network) this.crossing = internalChains(network);
  }
  /**
   * LimSim builds geometry only for the `via` lane of a link between two normal lanes. SUMO splits a
   * turn that yields inside the junction into two internal lanes (`:J_4_0`, then `:J_30_0` after the
   * internal junction); LimSim's evaluation has no lane for the second (`'NoneType' object has no
   * attribute 's'`). LimSim's recorder, not finding the second among the route's lanes, matches the
   * vehicle to a junction lane within 2 m and writes its position along that lane's spline: so does
   * simrec, with the link the vehicle drives (LimSim takes whichever lane within 2 m its set
   * iteration gives last, which with two turning lanes side by side can be the neighbour).
   */
  junctionLane(lane: string, lanePos: number, x: number, y: number): { lane: string; lanePos: number } {
    const first = this.crossing.get(lane);
    if (!first || first.lane === lane) return { lane, lanePos };
    this.geometry ??= new LimSimLanes(this.network!);
    const spline = this.geometry.spline(first.lane);
    return { lane: first.lane, lanePos: spline ? spline.toFrenet(x, y).s : first.before + lanePos };
  }
  locate(x: number, y: number): { lane: string; lanePos: number } {
    if (this.network) {
      this.index ??= LaneIndex.build(this.network);
      const at = this.index.locate(x, y);
      if (at) return { lane: at.lane.id, lanePos: at.s };
    }
    this.missed++;
    return { lane: '', lanePos: 0 };
  }
  /** A normal lane's edge; internal (`:`) lanes have none a route names. */
  edge(lane: string): string | undefined {
    if (lane.startsWith(':') || lane === '') return undefined;
    return this.edgeOf.get(lane) ?? lane.replace(/_\d+$/, '');
  }
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function vehicleFrames(
  actor: ActorInfo,
  frames: FrameSample[],
  ego: ActorInfo | undefined,
  egoAt: Map<number, Sample>,
  locator: LaneLocator,
): { frameRows: Row[]; route: string[] } {
  const declared = Array.isArray(actor.attributes.route) ? (actor.attributes.route as string[]) : undefined;
  const route: string[] = declared ? [...declared] : [];
  let routeIdx = 0;
  const frameRows: Row[] = [];
  frames.forEach(({ frame, sample: s }, k) => {
    const x = s.x as number;
    const y = s.y as number;
    const previous = frames[k - 1];
    const next = frames[k + 1];
    const neighbour = next ?? previous;
    const span = neighbour ? (neighbour.frame - frame) * 0.1 : 0;
    const speed =
      num(s.speed) ??
      (num(s.vx) !== undefined && num(s.vy) !== undefined
        ? Math.hypot(s.vx as number, s.vy as number)
        : neighbour
          ? Math.hypot((neighbour.sample.x as number) - x, (neighbour.sample.y as number) - y) /
            Math.abs(span)
          : 0);
    const found =
      typeof s.lane === 'string' ? { lane: s.lane, lanePos: num(s.lanePos) ?? 0 } : locator.locate(x, y);
    const at = locator.junctionLane(found.lane, found.lanePos, x, y);
    const edge = locator.edge(at.lane);
    if (edge !== undefined) {
      if (!declared && route[route.length - 1] !== edge) route.push(edge);
      const found = route.indexOf(edge, routeIdx);
      if (found >= 0) routeIdx = found;
    }
    let vtag = typeof s.vtag === 'string' ? s.vtag : undefined;
    if (vtag === undefined) {
      const e = egoAt.get(frame);
      vtag =
        actor === ego
          ? 'ego'
          : !e || Math.hypot((e.x as number) - x, (e.y as number) - y) <= AOI_RADIUS
            ? 'AoI'
            : 'outOfAoI';
    }
    frameRows.push({
      frame,
      vid: actor.id,
      vtag,
      x,
      y,
      yaw: limSimYaw(s.yaw as number, num(s.yawTurns) ?? 0),
      speed,
      accel: num(s.accel) ?? 0,
      laneID: at.lane,
      lanePos: at.lanePos,
      // On a junction lane, the edge it came from: SUMO's route index and LimSim's LCRDict agree.
      routeIdx: num(s.routeIdx) ?? routeIdx,
    });
  });
  // A measured acceleration where the run has none: the change of speed between frames.
  frames.forEach(({ sample }, k) => {
    if (num(sample.accel) !== undefined) return;
    const a = frameRows[k - 1] ?? frameRows[k]!;
    const b = frameRows[k - 1] ? frameRows[k]! : (frameRows[k + 1] ?? frameRows[k]!);
    const dt = ((b.frame as number) - (a.frame as number)) * 0.1;
    frameRows[k]!.accel = dt > 0 ? ((b.speed as number) - (a.speed as number)) / dt : 0;
  });
  return { frameRows, route };
}

function vehicleRow(actor: ActorInfo, route: string[], warn: (m: string) => void, defaulted: string[]): Row {
  const a = actor.attributes;
  if (!actor.extents)
    warn(
      `actor ${actor.id} has no extents: vehicleINFO gets ${DEFAULT_EXTENTS.length} x ${DEFAULT_EXTENTS.width} m`,
    );
  const extents = actor.extents ?? DEFAULT_EXTENTS;
  // LimSim's names, or SUMO's vType attributes (accel, decel) as the demo and SUMO keep them.
  const given = {
    maxAccel: num(a.maxAccel) ?? num(a.accel),
    maxDecel: num(a.maxDecel) ?? num(a.decel),
    maxSpeed: num(a.maxSpeed),
  };
  if (Object.values(given).some((v) => v === undefined)) defaulted.push(actor.id);
  const limits = {
    maxAccel: given.maxAccel ?? SUMO_DEFAULT_LIMITS.maxAccel,
    maxDecel: given.maxDecel ?? SUMO_DEFAULT_LIMITS.maxDecel,
    maxSpeed: given.maxSpeed ?? SUMO_DEFAULT_LIMITS.maxSpeed,
  };
  const vType = [a.vType, a.vehicleType, actor.sourceClass, actor.kind].find(
    (v) => typeof v === 'string' && v !== '',
  );
  return {
    vid: actor.id,
    length: extents.length,
    width: extents.width,
    ...limits,
    vTypeID: vType as string,
    routes: formatRoute(route),
  };
}

function lightRows(light: ActorInfo, frames: FrameSample[], network: RoadNetwork | undefined): Row[] {
  const programs = network?.trafficLights.find((t) => t.id === light.id)?.programs ?? [];
  return frames.map(({ frame, sample: s }) => {
    const state = typeof s.state === 'string' ? s.state : null;
    let nextPhase = typeof s.nextPhase === 'string' ? s.nextPhase : null;
    if (nextPhase === null && state !== null) {
      // As LimSim does: the next entry of the program's phase list, cyclically.
      const program = programs.find((p) => p.programId === s.program) ?? programs[0];
      const phases = program?.phases ?? [];
      const index =
        typeof s.phase === 'number' && phases[s.phase]?.state === state
          ? s.phase
          : phases.findIndex((p) => p.state === state);
      if (index >= 0) nextPhase = phases[(index + 1) % phases.length]!.state;
    }
    const timeToSwitch = num(s.timeToSwitch);
    const switchTime =
      num(s.switchTime) ?? (timeToSwitch === undefined ? null : Math.round(timeToSwitch * 10) / 10);
    return { frame, id: light.id, currPhase: state, nextPhase, switchTime };
  });
}

function evaluationRows(frames: FrameSample[]): Row[] {
  return frames.map(({ frame, sample }) => {
    const row: Row = { frame };
    for (const c of EVALUATION_COLUMNS) row[c] = num(sample[c]) ?? null;
    return row;
  });
}

/** The startTime text an import kept, if the run still begins then (LimSim's spelling of it comes back). */
function keptStartTime(m: JsonObject, begin: number): string | undefined {
  if (m.source !== 'limsim' || typeof m.startTime !== 'string') return undefined;
  try {
    return parseStartTime(m.startTime, 'startTime') === begin ? m.startTime : undefined;
  } catch {
    return undefined;
  }
}

function simRow(run: RunInfo, ego: ActorInfo | undefined, network: RoadNetwork | undefined): Row {
  const m = run.metadata;
  const localPos =
    Array.isArray(m.localPos) && m.localPos.length === 2 ? (m.localPos as number[]) : undefined;
  const boundary =
    network?.geoReference?.convBoundary ??
    (Array.isArray(m.netBoundary) && m.netBoundary.length === 4
      ? (m.netBoundary as [number, number, number, number])
      : undefined) ??
    (network
      ? ([...network.boundary.min, ...network.boundary.max] as [number, number, number, number])
      : undefined);
  return {
    startTime: keptStartTime(m, run.begin) ?? formatStartTime(run.begin),
    localPosx: localPos?.[0] ?? null,
    localPosy: localPos?.[1] ?? null,
    // LimSim keeps a radius only for a fixed scene, with its centre; ego tracking writes NULL.
    radius: localPos && typeof m.radius === 'number' ? m.radius : null,
    egoID: ego?.id ?? '',
    netBoundary: boundary ? formatNetBoundary(boundary) : null,
    description: typeof m.description === 'string' ? m.description : ego ? 'ego track' : 'local area',
    note: typeof m.note === 'string' ? m.note : run.description,
  };
}

/**
 * For every internal lane of a link between two normal lanes: the link's `via` lane (the one LimSim
 * keeps) and the length of the internal lanes before it on the link.
 */
function internalChains(network: RoadNetwork): Map<string, { lane: string; before: number }> {
  const lanes = new Map(network.lanes.map((l) => [l.id, l]));
  const onward = new Map<string, string>();
  for (const c of network.connections)
    if (c.via !== undefined && lanes.get(c.fromLane)?.function === 'internal') onward.set(c.fromLane, c.via);
  const chains = new Map<string, { lane: string; before: number }>();
  for (const c of network.connections) {
    if (c.via === undefined || lanes.get(c.fromLane)?.function !== 'normal') continue;
    let before = 0;
    for (
      let lane: string | undefined = c.via;
      lane !== undefined && !chains.has(lane);
      lane = onward.get(lane)
    ) {
      chains.set(lane, { lane: c.via, before });
      before += lanes.get(lane)?.length ?? 0;
    }
  }
  return chains;
}
