import { invalid } from '../model/errors.js';
import type { JsonObject } from '../model/json.js';
import type { Connection, RoadLane, RoadNetwork } from '../model/roadnet.js';
import type { StoreBackend } from '../model/store-port.js';
import type { FieldDecl, Sample } from '../model/stream.js';
import { lastAtOrBefore } from '../model/sorted-search.js';
import { wrapAngle } from '../model/units.js';
import { writeDerivedStream } from '../record/derived-streams.js';
import { requireRun } from '../replay/run-queries.js';
import { loadRoadNetwork } from '../roadnet/roadnet-attachment.js';
import { LaneIndex } from '../roadnet/spatial-index.js';
import { loadTracks, type ActorTrack } from './actor-tracks.js';
import { boxesOverlap, type Box } from './footprint.js';
import { consumption, discomfort, offset, orientation } from './limsim-formulas.js';
import {
  EVALUATION_STREAM,
  EVENTS_STREAM,
  LIMSIM_METRIC_UNITS,
  LIMSIM_METRICS,
  limsimScore,
  overallScore,
  SCORE_WEIGHTS,
  type LimsimMetric,
} from '../model/evaluation-scores.js';
import { LimSimLanes } from '../roadnet/limsim/limsim-geometry.js';
import { LIMSIM_TTC, SIMREC_TTC, timeToCollision, type MovingBox } from './time-to-collision.js';

/**
 * `limsim`: LimSim's numbers as its code computes them (jerk from the stored `accel`, TTC against
 * vehicles within 50 m, offset zeroed near a lane's start). `simrec` (the default) makes two
 * documented fixes: jerk from the measured acceleration (the change of speed over time, since
 * LimSim's `accel` column holds the vType's max-accel parameter), and TTC over every actor on the
 * road within 100 m (pedestrians and cyclists too), refined below LimSim's 0.1 s step.
 */
export type EvaluationMode = 'simrec' | 'limsim';

export interface EvaluationOptions {
  /** The actor to score; default: the run's ego. */
  actor?: string;
  mode?: EvaluationMode;
  /** TTC below this (s), but above 0, is a near miss. */
  nearMissTtc?: number;
  /** Not moving (speed below 0.1 m/s) this long (s), not at a red light, is a blocked actor. */
  blockedSeconds?: number;
  /** Deceleration beyond this (m/s^2, positive) is hard braking. */
  hardBraking?: number;
  /**
   * Over the speed allowed by more than this (m/s, default 0.5) is speeding. The speed allowed is the
   * lane's limit, times the actor's own speed factor where its attributes carry one above 1
   * (`speedFactor`: SUMO's vehicles drive up to it times a lane's limit by design, as `record sumo` and
   * the demo record it).
   */
  speedingTolerance?: number;
  /** Write the metrics and events into the run (default true). */
  store?: boolean;
  /** Each frame's metrics as they are computed (what the `evaluation` stream stores). */
  onFrame?: (sample: Sample) => void;
  signal?: AbortSignal;
  onProgress?: (fraction: number) => void;
}

export interface EvaluationEvent {
  kind: 'collision' | 'near_miss' | 'blocked' | 'lane_departure' | 'speeding' | 'red_light' | 'hard_braking';
  /** Start of the event (microseconds) and how long it lasted (s). */
  t: number;
  duration: number;
  actors: string[];
  x: number;
  y: number;
  detail: string;
}

export interface MetricSummary {
  min: number;
  mean: number;
  p50: number;
  p95: number;
  max: number;
  samples: number;
}

export interface EvaluationSummary {
  run: number;
  actor: string;
  mode: EvaluationMode;
  frames: number;
  /** Time gaps longer than 2.5 nominal steps: jerk is not computed across them. */
  gaps: number;
  metrics: Record<string, MetricSummary>;
  /** Mean LimSim display score per metric, in [1, 4]. */
  limsimScores: Partial<Record<LimsimMetric, number>>;
  events: EvaluationEvent[];
  eventCounts: Record<string, number>;
  score: number;
  weights: Record<string, number>;
  skipped: string[];
  streams: string[];
}

// An actor whose presence is not known to have ended, not heard from for 1 s, has left the scene
// (ActorTrack.indexAt: presence, where the run kept it, decides first).
const MAX_AGE = 1_000_000;
const STOPPED = 0.1; // m/s

const f64 = (name: string, unit: string, optional = false, description?: string): FieldDecl => ({
  name,
  type: 'f64',
  unit,
  optional,
  ...(description ? { description } : {}),
});

export const EVALUATION_FIELDS: FieldDecl[] = [
  f64('offset', LIMSIM_METRIC_UNITS.offset, true, 'LimSim: squared lateral offset from the lane centre'),
  f64('discomfort', LIMSIM_METRIC_UNITS.discomfort, false, 'LimSim: squared jerk'),
  f64('collision', LIMSIM_METRIC_UNITS.collision, false, 'LimSim: time to collision, 20 when none is coming'),
  f64(
    'orientation',
    LIMSIM_METRIC_UNITS.orientation,
    true,
    'LimSim: squared difference of sin(heading) and sin(lane heading), both mod pi',
  ),
  f64('consumption', LIMSIM_METRIC_UNITS.consumption, false, 'LimSim: (v a)^2 + v^3'),
  ...LIMSIM_METRICS.map((m) =>
    f64(`${m}Score`, '1', m === 'offset' || m === 'orientation', `LimSim display score of ${m}, 1..4`),
  ),
  f64('accel', 'm/s^2', false, 'acceleration used for jerk and consumption'),
  f64('jerk', 'm/s^3', false),
  f64('laneOffset', 'm', true, 'signed lateral offset, left positive'),
  f64('headway', 's', true, 'time to reach the vehicle ahead in the same lane'),
  f64('speedLimit', 'm/s', true),
  {
    name: 'ttcActor',
    type: 'string',
    optional: true,
    description: 'the actor the time to collision is with',
  },
];

export const EVENT_FIELDS: FieldDecl[] = [
  { name: 'kind', type: 'string' },
  { name: 'actors', type: 'json' },
  f64('x', 'm'),
  f64('y', 'm'),
  f64('duration', 's'),
  { name: 'detail', type: 'string' },
];

function summarize(values: number[]): MetricSummary {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return {
    min: sorted[0]!,
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    p50: at(0.5),
    p95: at(0.95),
    max: sorted[sorted.length - 1]!,
    samples: values.length,
  };
}

/** Turns per-frame conditions into events: one per run of consecutive frames where it holds. */
class EpisodeTracker {
  private readonly open = new Map<
    string,
    { t: number; x: number; y: number; actors: string[]; detail: string }
  >();
  readonly events: EvaluationEvent[] = [];
  private readonly kind: EvaluationEvent['kind'];
  private readonly minDuration: number;
  constructor(kind: EvaluationEvent['kind'], minDuration = 0) {
    this.kind = kind;
    this.minDuration = minDuration;
  }

  /** Marks the condition as holding at t for `key` this frame. */
  hold(key: string, t: number, at: { x: number; y: number }, actors: string[], detail: string): void {
    if (!this.open.has(key)) this.open.set(key, { t, x: at.x, y: at.y, actors, detail });
  }

  /** Closes the episodes not held this frame (those whose key is not in `held`). */
  endFrame(held: Set<string>, t: number): void {
    for (const [key, e] of this.open)
      if (!held.has(key)) {
        this.close(e, t);
        this.open.delete(key);
      }
  }

  finish(t: number): void {
    for (const e of this.open.values()) this.close(e, t);
    this.open.clear();
  }

  private close(e: { t: number; x: number; y: number; actors: string[]; detail: string }, end: number): void {
    const duration = (end - e.t) / 1e6;
    if (duration < this.minDuration) return;
    this.events.push({
      kind: this.kind,
      t: e.t,
      duration,
      actors: e.actors,
      x: e.x,
      y: e.y,
      detail: e.detail,
    });
  }
}

/** Heading of a polyline at s metres along it. */
function headingAt(lane: RoadLane, s: number): number {
  const line = lane.centerLine;
  let rest = s;
  for (let i = 1; i < line.length; i++) {
    const a = line[i - 1]!;
    const b = line[i]!;
    const d = Math.hypot(b[0] - a[0], b[1] - a[1]);
    if (rest <= d || i === line.length - 1) return Math.atan2(b[1] - a[1], b[0] - a[0]);
    rest -= d;
  }
  return 0;
}

/**
 * LimSim's orientation reference (RealTimeEvaluation._evaluate_orientation): on a normal lane, the
 * spline's yaw at the stored lane position; within 10 frames of a lane change it moves a tenth of
 * the way per frame from the old reference toward the new lane's, and takes it once within 1e-3.
 * On a junction lane the reference stays. Its state is LimSim's ref_yaw and new_yaw.
 */
class LimSimOrientation {
  private refYaw = 0;
  private newYaw = 0;
  private readonly laneHistory: string[] = [];
  update(lanes: LimSimLanes, lane: string, lanePos: number, yaw: number): number {
    this.laneHistory.push(lane);
    if (this.laneHistory.length > 100) this.laneHistory.shift();
    const spline = lanes.isNormal(lane) ? lanes.spline(lane) : undefined;
    if (spline) {
      const h = this.laneHistory;
      const target = spline.yaw(lanePos);
      if (h.length >= 11 && h[h.length - 1] !== h[h.length - 11]) {
        this.newYaw += 0.1 * (target - this.refYaw);
        if (Math.abs(target - this.newYaw) < 1e-3) this.refYaw = target;
      } else {
        this.refYaw = target;
        this.newYaw = target;
      }
    }
    return orientation(yaw, this.newYaw);
  }
}

interface RoadContext {
  net: RoadNetwork;
  index: LaneIndex;
  lanes: Map<string, RoadLane>;
  /** Internal lane (or to-lane when no via) -> the signal that controls it. */
  signalOfVia: Map<string, Connection>;
  /** Lanes that end at a signal: a vehicle standing on one may be waiting for it. */
  signalledFromLanes: Map<string, Connection[]>;
}

function roadContext(net: RoadNetwork): RoadContext {
  const signalOfVia = new Map<string, Connection>();
  const signalledFromLanes = new Map<string, Connection[]>();
  for (const c of net.connections) {
    if (c.trafficLight === undefined || c.linkIndex === undefined) continue;
    signalOfVia.set(c.via ?? c.toLane, c);
    signalledFromLanes.set(c.fromLane, [...(signalledFromLanes.get(c.fromLane) ?? []), c]);
  }
  return {
    net,
    index: LaneIndex.build(net),
    lanes: new Map(net.lanes.map((l) => [l.id, l])),
    signalOfVia,
    signalledFromLanes,
  };
}

/** Traffic-light states over time: each light's `state` strings, from the run's signal streams. */
async function loadSignals(
  store: StoreBackend,
  run: number,
): Promise<Map<string, { t: number[]; state: string[] }>> {
  const [actors, streams] = await Promise.all([store.listActors(run), store.listStreams(run)]);
  const lights = new Set(actors.filter((a) => a.kind === 'traffic_light').map((a) => a.id));
  const signals = new Map<string, { t: number[]; state: string[] }>();
  for (const s of streams) {
    if (
      s.actor === null ||
      !lights.has(s.actor) ||
      !s.fields.some((f) => f.name === 'state' && f.type === 'string')
    )
      continue;
    const series = { t: [] as number[], state: [] as string[] };
    for await (const batch of store.readSamples({ run, stream: s.id }))
      for (const sample of batch)
        if (typeof sample.state === 'string') {
          series.t.push(sample.t);
          series.state.push(sample.state);
        }
    signals.set(s.actor, series);
  }
  return signals;
}

function signalStateAt(series: { t: number[]; state: string[] } | undefined, t: number): string | undefined {
  if (!series) return undefined;
  const found = lastAtOrBefore(series.t, t);
  return found < 0 ? undefined : series.state[found];
}

const isRed = (ch: string | undefined): boolean => ch === 'r' || ch === 'R' || ch === 's';

/**
 * Scores one actor of a run, frame by frame (the frames are its own state samples), and finds the
 * run's events. Stores the metrics as stream `<actor>/evaluation` and the events as stream `events`.
 */
export async function evaluateRun(
  store: StoreBackend,
  runId: number,
  options: EvaluationOptions = {},
): Promise<EvaluationSummary> {
  const run = await requireRun(store, runId);
  const mode = options.mode ?? 'simrec';
  const tracks = await loadTracks(store, runId, options.signal);
  const actors = await store.listActors(runId);
  const actorId = options.actor ?? actors.find((a) => a.kind === 'ego')?.id;
  if (!actorId)
    throw invalid(
      `run ${runId} has no ego actor; choose the actor to score with --actor ID (actors with states: ${tracks.map((t) => t.actor.id).join(', ') || 'none'})`,
    );
  const ego = tracks.find((t) => t.actor.id === actorId);
  if (!ego) throw invalid(`run ${runId}: actor ${JSON.stringify(actorId)} has no state samples to evaluate`);

  const skipped: string[] = [];
  const net = await loadRoadNetwork(store, runId);
  const road = net ? roadContext(net) : null;
  if (!road)
    skipped.push(
      'offset, orientation, laneOffset, speeding, red-light violations and lane departures: the run has no road network',
    );
  const signals = road
    ? await loadSignals(store, runId)
    : new Map<string, { t: number[]; state: string[] }>();
  if (road && road.signalOfVia.size > 0 && signals.size === 0)
    skipped.push('red-light violations: the run has no traffic-light state streams');

  const ttcOptions = mode === 'limsim' ? LIMSIM_TTC : SIMREC_TTC;
  const limsimLanes = mode === 'limsim' && road ? new LimSimLanes(road.net) : undefined;
  const limsimOrientation = new LimSimOrientation();
  const agentRadius = mode === 'limsim' ? 50 : 100;
  const trackers = {
    collision: new EpisodeTracker('collision'),
    near_miss: new EpisodeTracker('near_miss'),
    blocked: new EpisodeTracker('blocked', options.blockedSeconds ?? 5),
    lane_departure: new EpisodeTracker('lane_departure'),
    speeding: new EpisodeTracker('speeding'),
    red_light: new EpisodeTracker('red_light'),
    hard_braking: new EpisodeTracker('hard_braking'),
  };
  const nearMiss = options.nearMissTtc ?? 1.5;
  const hardBraking = options.hardBraking ?? 4;
  const tolerance = options.speedingTolerance ?? 0.5;
  const speedFactor = ownSpeedFactor(ego.actor.attributes);

  // Nominal step: the median of the actor's sample intervals.
  const intervals = ego.t
    .slice(1)
    .map((t, i) => t - ego.t[i]!)
    .sort((a, b) => a - b);
  const nominal = intervals[Math.floor(intervals.length / 2)] ?? 100_000;
  let gaps = 0;

  const samples: Sample[] = [];
  let previousSpeed: number | null = null;
  let previousAccel: number | null = null;
  let previousT: number | null = null;
  let yawRef: number | null = null;
  let previousNormalLane: string | null = null;
  let easing: { from: number; frames: number } | null = null;
  let previousLane: string | null = null;

  for (let i = 0; i < ego.t.length; i++) {
    options.signal?.throwIfAborted();
    const t = ego.t[i]!;
    const x = ego.x[i]!;
    const y = ego.y[i]!;
    const yaw = ego.yaw[i]!;
    const speed = ego.speed[i]!;
    const dt = previousT === null ? nominal / 1e6 : (t - previousT) / 1e6;
    const gap = previousT !== null && t - previousT > 2.5 * nominal;
    if (gap) gaps++;

    // Acceleration: LimSim uses its stored column; simrec measures it from the change of speed.
    let accel: number;
    if (mode === 'limsim' && ego.accel[i] !== null) accel = ego.accel[i]!;
    else if (previousSpeed === null || gap || dt <= 0) accel = ego.accel[i] ?? 0;
    else accel = (speed - previousSpeed) / dt;
    const jerk =
      previousAccel === null || gap || dt <= 0 ? 0 : (accel - previousAccel) / (mode === 'limsim' ? 0.1 : dt);

    const sample: Sample = {
      t,
      // The scored actor's own step (a LimSim frame, a SUMO step), so metrics line up with its data.
      step: ego.step[i]!,
      discomfort: discomfort(jerk),
      consumption: consumption(speed, accel),
      accel,
      jerk,
    };

    // Other actors at this moment.
    const others: { track: ActorTrack; k: number }[] = [];
    for (const track of tracks) {
      if (track === ego) continue;
      const k = track.indexAt(t, MAX_AGE);
      if (k >= 0) others.push({ track, k });
    }
    const box = (track: ActorTrack, k: number): MovingBox & { id: string } => ({
      id: track.actor.id,
      x: track.x[k]!,
      y: track.y[k]!,
      yaw: track.yaw[k]!,
      speed: track.speed[k]!,
      length: track.length,
      width: track.width,
    });
    const egoBox = box(ego, i);
    const agents = others
      .filter(
        ({ track, k }) =>
          (mode === 'simrec' || track.actor.kind === 'vehicle' || track.actor.kind === 'ego') &&
          Math.hypot(track.x[k]! - x, track.y[k]! - y) <= agentRadius,
      )
      .map(({ track, k }) => box(track, k));
    const ttc = timeToCollision(egoBox, agents, ttcOptions);
    sample.collision = ttc.ttc;
    if (ttc.agent) sample.ttcActor = ttc.agent;
    const heldNear = new Set<string>();
    if (ttc.agent && ttc.ttc > 0 && ttc.ttc < nearMiss) {
      trackers.near_miss.hold(
        ttc.agent,
        t,
        egoBox,
        [actorId, ttc.agent],
        `time to collision ${ttc.ttc.toFixed(2)} s`,
      );
      heldNear.add(ttc.agent);
    }
    trackers.near_miss.endFrame(heldNear, t);

    // Headway: the nearest actor ahead within half a lane of the actor's heading line.
    let headway: number | undefined;
    for (const a of agents) {
      const dx = (a.x - x) * Math.cos(yaw) + (a.y - y) * Math.sin(yaw);
      const dy = -(a.x - x) * Math.sin(yaw) + (a.y - y) * Math.cos(yaw);
      if (dx <= 0 || Math.abs(dy) > 1.75 || speed < STOPPED) continue;
      const h = Math.max(0, dx - (egoBox.length + a.length) / 2) / speed;
      if (headway === undefined || h < headway) headway = h;
    }
    if (headway !== undefined) sample.headway = headway;

    // Lane metrics.
    const heldDeparture = new Set<string>();
    const heldSpeeding = new Set<string>();
    const heldRed = new Set<string>();
    if (road) {
      const named = ego.lane[i] ? road.lanes.get(ego.lane[i]!) : undefined;
      const position = named
        ? road.index.lanesNear(x, y, 20).find((p) => p.lane.id === named.id)
        : road.index.locate(x, y, { maxDistance: 10 });
      if (position) {
        const lane = position.lane;
        const lanePos = ego.lanePos[i] ?? position.s;
        let off = offset(position.t);
        if (mode === 'limsim' && (lanePos > lane.length || lanePos < lane.width / 2)) off = 0;
        sample.offset = off;
        sample.laneOffset = position.t;
        if (lane.function === 'normal') {
          const target = headingAt(lane, Math.min(lanePos, lane.length));
          if (previousNormalLane !== null && previousNormalLane !== lane.id && yawRef !== null)
            easing = { from: yawRef, frames: 0 };
          if (easing && easing.frames < 10) {
            easing.frames++;
            yawRef = easing.from + wrapAngle(target - easing.from) * (easing.frames / 10);
          } else {
            easing = null;
            yawRef = target;
          }
          // A change between two lanes of one edge is the centre crossing the line between them.
          const before: RoadLane | undefined = previousNormalLane
            ? road.lanes.get(previousNormalLane)
            : undefined;
          if (before && before.id !== lane.id && before.edge === lane.edge) {
            trackers.lane_departure.hold(`${t}`, t, { x, y }, [actorId], `from ${before.id} to ${lane.id}`);
            heldDeparture.add(`${t}`);
          }
          previousNormalLane = lane.id;
        }
        if (yawRef !== null) sample.orientation = orientation(yaw, yawRef);
        // LimSim's own numbers: against its splines, at the lane and position the run stored.
        const limsimLane = limsimLanes && ego.lane[i] ? ego.lane[i]! : undefined;
        const spline = limsimLane === undefined ? undefined : limsimLanes!.spline(limsimLane);
        if (limsimLane !== undefined && spline) {
          const s = ego.lanePos[i] ?? spline.toFrenet(x, y).s;
          // LimSim compares the position with the ego's half width, not the lane's.
          sample.offset = s > spline.length || s < ego.width / 2 ? 0 : offset(spline.toFrenet(x, y).d);
          sample.orientation = limsimOrientation.update(limsimLanes!, limsimLane, s, yaw);
        }
        if (lane.speedLimit !== undefined) {
          sample.speedLimit = lane.speedLimit;
          const allowed = lane.speedLimit * speedFactor;
          if (speed > allowed + tolerance) {
            trackers.speeding.hold(
              'speeding',
              t,
              { x, y },
              [actorId],
              `${speed.toFixed(1)} m/s on ${lane.id} limited to ${lane.speedLimit.toFixed(1)} m/s` +
                (speedFactor > 1
                  ? ` (${allowed.toFixed(1)} m/s with its speed factor ${speedFactor.toFixed(2)})`
                  : ''),
            );
            heldSpeeding.add('speeding');
          }
        }
        // Entering a signalled junction lane on red.
        if (lane.id !== previousLane) {
          const c = road.signalOfVia.get(lane.id);
          const ch = c ? signalStateAt(signals.get(c.trafficLight!), t)?.[c.linkIndex!] : undefined;
          if (c && isRed(ch)) {
            trackers.red_light.hold(
              `${t}`,
              t,
              { x, y },
              [actorId, c.trafficLight!],
              `entered ${lane.id} on ${ch} (light ${c.trafficLight}, link ${c.linkIndex})`,
            );
            heldRed.add(`${t}`);
          }
        }
        previousLane = lane.id;
      } else {
        trackers.lane_departure.hold('off-road', t, { x, y }, [actorId], 'left the road');
        heldDeparture.add('off-road');
      }
    }
    trackers.lane_departure.endFrame(heldDeparture, t);
    trackers.speeding.endFrame(heldSpeeding, t);
    trackers.red_light.endFrame(heldRed, t);

    const heldBraking = new Set<string>();
    if (accel < -hardBraking) {
      trackers.hard_braking.hold('braking', t, { x, y }, [actorId], `${accel.toFixed(1)} m/s^2`);
      heldBraking.add('braking');
    }
    trackers.hard_braking.endFrame(heldBraking, t);

    // Collisions and blocked actors over every actor, not only the scored one.
    const present = [{ track: ego, k: i }, ...others];
    const heldCollisions = new Set<string>();
    const grid = new Map<string, number[]>();
    const boxes: Box[] = present.map(({ track, k }) => box(track, k));
    boxes.forEach((b, n) => {
      const key = `${Math.floor(b.x / 10)},${Math.floor(b.y / 10)}`;
      grid.set(key, [...(grid.get(key) ?? []), n]);
    });
    boxes.forEach((b, n) => {
      const cx = Math.floor(b.x / 10);
      const cy = Math.floor(b.y / 10);
      for (let gx = cx - 1; gx <= cx + 1; gx++)
        for (let gy = cy - 1; gy <= cy + 1; gy++)
          for (const m of grid.get(`${gx},${gy}`) ?? []) {
            if (m <= n || !boxesOverlap(b, boxes[m]!)) continue;
            // Pedestrians brushing past each other are no driving event, nor two props standing
            // in each other (a CARLA town's garden table and its chairs).
            const kinds = [present[n]!.track.actor.kind, present[m]!.track.actor.kind];
            if (kinds.every((k) => k === 'pedestrian') || kinds.every((k) => k === 'static')) continue;
            const ids = [present[n]!.track.actor.id, present[m]!.track.actor.id].sort();
            const key = ids.join('\u0000');
            trackers.collision.hold(
              key,
              t,
              { x: (b.x + boxes[m]!.x) / 2, y: (b.y + boxes[m]!.y) / 2 },
              ids,
              'footprints overlap',
            );
            heldCollisions.add(key);
          }
    });
    trackers.collision.endFrame(heldCollisions, t);
    const heldBlocked = new Set<string>();
    const queued = queuedBehindStoppedLeader(present);
    for (const { track, k } of present) {
      // A prop standing still is where it belongs, not blocked.
      if (track.actor.kind === 'pedestrian' || track.actor.kind === 'static' || track.speed[k]! >= STOPPED)
        continue;
      // A queue is one event, at its head: the vehicles behind wait for it, not for the road.
      if (queued.has(track)) continue;
      const lane = track.lane[k] ?? (road ? road.index.locate(track.x[k]!, track.y[k]!)?.lane.id : undefined);
      const waiting =
        lane !== undefined &&
        (road?.signalledFromLanes.get(lane) ?? []).some(
          (c) => !/^[gG]$/.test(signalStateAt(signals.get(c.trafficLight!), t)?.[c.linkIndex!] ?? 'r'),
        );
      if (waiting) continue;
      trackers.blocked.hold(
        track.actor.id,
        t,
        { x: track.x[k]!, y: track.y[k]! },
        [track.actor.id],
        'not moving, not at a red light',
      );
      heldBlocked.add(track.actor.id);
    }
    trackers.blocked.endFrame(heldBlocked, t);

    for (const m of LIMSIM_METRICS)
      if (typeof sample[m] === 'number') sample[`${m}Score`] = limsimScore(m, sample[m] as number);
    samples.push(sample);
    options.onFrame?.(sample);
    previousSpeed = speed;
    previousAccel = accel;
    previousT = t;
    if (i % 500 === 0) options.onProgress?.(i / ego.t.length);
  }
  const end = ego.t[ego.t.length - 1]!;
  for (const tracker of Object.values(trackers)) tracker.finish(end);
  for (const track of tracks) track.rewind();

  const own = Object.values(trackers)
    .flatMap((tr) => tr.events)
    .sort((a, b) => a.t - b.t);
  // What the simulator itself recorded (CARLA's recorder's collisions: `source` says who) stays beside
  // what the evaluator found, in the summary and in the stored stream.
  const recorded = await recordedEvents(store, runId);
  const events = [...own, ...recorded.map(asEvaluationEvent)].sort((a, b) => a.t - b.t);
  const metrics: Record<string, MetricSummary> = {};
  for (const name of [
    'offset',
    'discomfort',
    'collision',
    'orientation',
    'consumption',
    'jerk',
    'accel',
    'headway',
    'laneOffset',
  ]) {
    const values = samples.map((s) => s[name]).filter((v): v is number => typeof v === 'number');
    if (values.length) metrics[name] = summarize(values);
  }
  const limsimScores: Partial<Record<LimsimMetric, number>> = {};
  for (const m of LIMSIM_METRICS) {
    const values = samples.map((s) => s[`${m}Score`]).filter((v): v is number => typeof v === 'number');
    if (values.length) limsimScores[m] = values.reduce((a, b) => a + b, 0) / values.length;
  }
  const collided = events.some((e) => e.kind === 'collision' && e.actors.includes(actorId));
  const score = overallScore(limsimScores, collided);
  const eventCounts: Record<string, number> = {};
  for (const e of events) eventCounts[e.kind] = (eventCounts[e.kind] ?? 0) + 1;

  const streams: string[] = [];
  if (options.store !== false) {
    streams.push(
      await writeDerivedStream(
        store,
        runId,
        {
          name: EVALUATION_STREAM,
          actor: actorId,
          fields: EVALUATION_FIELDS,
          metadata: { mode, weights: SCORE_WEIGHTS },
        },
        samples,
      ),
    );
    const eventSamples: Sample[] = [
      ...own.map((e, n) => ({
        t: e.t,
        step: n,
        kind: e.kind,
        actors: e.actors,
        x: e.x,
        y: e.y,
        duration: e.duration,
        detail: e.detail,
      })),
      ...recorded,
    ].sort((a, b) => a.t - b.t);
    // Events start in time order but several may start at one time; the stream needs non-decreasing t.
    streams.push(
      await writeDerivedStream(
        store,
        runId,
        { name: EVENTS_STREAM, fields: EVENT_FIELDS, metadata: { evaluatedActor: actorId } },
        eventSamples,
      ),
    );
  }
  options.onProgress?.(1);
  return {
    run: run.id,
    actor: actorId,
    mode,
    frames: samples.length,
    gaps,
    metrics,
    limsimScores,
    events,
    eventCounts,
    score,
    weights: { ...SCORE_WEIGHTS },
    skipped,
    streams,
  };
}

/** The events a simulator recorded into the run's `events` stream (those that say their `source`). */
async function recordedEvents(store: StoreBackend, run: number): Promise<Sample[]> {
  const streams = await store.listStreams(run);
  if (!streams.some((s) => s.id === EVENTS_STREAM && s.samples > 0)) return [];
  const found: Sample[] = [];
  for await (const batch of store.readSamples({ run, stream: EVENTS_STREAM }))
    for (const s of batch) if (typeof s.source === 'string') found.push(s);
  return found;
}

const asEvaluationEvent = (s: Sample): EvaluationEvent => ({
  kind: s.kind as EvaluationEvent['kind'],
  t: s.t,
  duration: typeof s.duration === 'number' ? s.duration : 0,
  actors: Array.isArray(s.actors) ? s.actors.map(String) : [],
  x: typeof s.x === 'number' ? s.x : 0,
  y: typeof s.y === 'number' ? s.y : 0,
  detail: typeof s.detail === 'string' ? s.detail : '',
});

/**
 * The factor on a lane's limit that the actor was meant to drive up to: its `speedFactor` attribute
 * (SUMO's, as `record sumo` and the demo keep it) where above 1, else 1. A factor below 1 lowers no
 * limit: driving under the sign is no speeding, whatever the driver intended.
 */
function ownSpeedFactor(attributes: JsonObject | undefined): number {
  const factor = attributes?.speedFactor;
  return typeof factor === 'number' && Number.isFinite(factor) && factor > 1 ? factor : 1;
}

/**
 * The run's ego scored frame by frame, nothing stored: what a format that always carries scores
 * (LimSim's evaluationINFO) writes for a run not yet evaluated.
 */
export async function evaluationFrames(
  store: StoreBackend,
  runId: number,
  mode: EvaluationMode,
): Promise<Sample[]> {
  const frames: Sample[] = [];
  await evaluateRun(store, runId, { mode, store: false, onFrame: (s) => frames.push(s) });
  return frames;
}

/** How far behind a stopped vehicle (front to front, m) another stopped one on its lane is in its queue. */
const QUEUE_SPACING = 15;

/** The stopped vehicles that wait behind another stopped vehicle on the same lane. */
function queuedBehindStoppedLeader(present: { track: ActorTrack; k: number }[]): Set<ActorTrack> {
  const stoppedByLane = new Map<string, { track: ActorTrack; pos: number }[]>();
  for (const { track, k } of present) {
    const lane = track.lane[k];
    const pos = track.lanePos[k];
    if (track.actor.kind === 'pedestrian' || track.speed[k]! >= STOPPED || lane == null || pos == null)
      continue;
    stoppedByLane.set(lane, [...(stoppedByLane.get(lane) ?? []), { track, pos }]);
  }
  const queued = new Set<ActorTrack>();
  for (const stopped of stoppedByLane.values()) {
    stopped.sort((a, b) => b.pos - a.pos);
    for (let n = 1; n < stopped.length; n++)
      if (stopped[n - 1]!.pos - stopped[n]!.pos <= QUEUE_SPACING) queued.add(stopped[n]!.track);
  }
  return queued;
}
