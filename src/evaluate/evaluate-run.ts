import { invalid } from '../model/errors.js';
import { LIMSIM_METRICS, limsimScore, overallScore, SCORE_WEIGHTS } from '../model/evaluation-scores.js';
import type { StoreBackend } from '../model/store-port.js';
import type { Sample } from '../model/stream.js';
import { requireRun } from '../replay/run-queries.js';
import { LimSimLanes } from '../roadnet/limsim/limsim-geometry.js';
import { loadRoadNetwork } from '../roadnet/roadnet-attachment.js';
import { RunTracks } from './actor-tracks.js';
import { BlockedActors } from './detectors/blocked-actors.js';
import { Collisions } from './detectors/collisions.js';
import type { Detector, Present } from './detectors/detector.js';
import { HardBraking } from './detectors/hard-braking.js';
import { Kinematics } from './detectors/kinematics.js';
import { LaneKeeping } from './detectors/lane-keeping.js';
import { NearMisses } from './detectors/near-misses.js';
import { RedLights } from './detectors/red-lights.js';
import { Speeding } from './detectors/speeding.js';
import { asEvaluationEvent, recordedEvents, storeEvaluation } from './evaluation-storage.js';
import { meanLimsimScores, summarizeMetrics } from './evaluation-summary.js';
import type { EvaluationMode, EvaluationOptions, EvaluationSummary } from './evaluation-types.js';
import { loadSignals, positionOnRoad, roadContext, type SignalStates } from './road-context.js';

export { EVALUATION_FIELDS, EVENT_FIELDS } from './evaluation-storage.js';
export type {
  EvaluationEvent,
  EvaluationMode,
  EvaluationOptions,
  EvaluationSummary,
  MetricSummary,
} from './evaluation-types.js';

// An actor whose presence is not known to have ended, not heard from for 1 s, has left the scene
// (ActorTrack.indexAt: presence, where the run kept it, decides first).
const MAX_AGE = 1_000_000;

/**
 * Scores one actor of a run, frame by frame (the frames are its own state samples), and finds the
 * run's events. Stores the metrics as stream `<actor>/evaluation` and the events as stream `events`.
 *
 * Each metric, or kind of event, is a detector (detectors/) that sees every frame and then the end;
 * the summary (evaluation-summary.ts) and what is stored (evaluation-storage.ts) are made of what they
 * found.
 */
export async function evaluateRun(
  store: StoreBackend,
  runId: number,
  options: EvaluationOptions = {},
): Promise<EvaluationSummary> {
  const run = await requireRun(store, runId);
  const mode = options.mode ?? 'simrec';
  const limsim = mode === 'limsim';
  const runTracks = await RunTracks.open(store, runId, {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.readWindow ? { window: options.readWindow } : {}),
  });
  const tracks = runTracks.tracks;
  const actors = await store.listActors(runId);
  const actorId = options.actor ?? actors.find((a) => a.kind === 'ego')?.id;
  if (!actorId)
    throw invalid(
      `run ${runId} has no ego actor; choose the actor to score with --actor ID (actors with states: ${tracks.map((t) => t.actor.id).join(', ') || 'none'})`,
    );
  const ego = tracks.find((t) => t.actor.id === actorId);
  if (!ego) throw invalid(`run ${runId}: actor ${JSON.stringify(actorId)} has no state samples to evaluate`);
  await runTracks.readWhole(ego);

  const skipped: string[] = [];
  const net = await loadRoadNetwork(store, runId);
  const road = net ? roadContext(net) : null;
  if (!road)
    skipped.push(
      'offset, orientation, laneOffset, speeding, red-light violations and lane departures: the run has no road network',
    );
  const signals: SignalStates = road ? await loadSignals(store, runId) : new Map<string, never>();
  if (road && road.signalOfVia.size > 0 && signals.size === 0)
    skipped.push('red-light violations: the run has no traffic-light state streams');

  const kinematics = new Kinematics(ego, limsim);
  // In this order: a frame's metrics are written in it, and events that start at one time are listed in it.
  const detectors: Detector[] = [
    new Collisions(),
    new NearMisses(actorId, limsim, options.nearMissTtc ?? 1.5),
    new BlockedActors(options.blockedSeconds ?? 5, road, signals),
  ];
  if (road)
    detectors.push(
      new LaneKeeping(actorId, road, limsim ? new LimSimLanes(road.net) : undefined),
      new Speeding(actorId, ego.actor.attributes, options.speedingTolerance ?? 0.5),
      new RedLights(actorId, road, signals),
    );
  detectors.push(new HardBraking(actorId, options.hardBraking ?? 4));

  const samples: Sample[] = [];
  for (let i = 0; i < ego.t.length; i++) {
    options.signal?.throwIfAborted();
    const t = ego.t[i]!;
    await runTracks.reach(t);
    // The scored actor's own step (a LimSim frame, a SUMO step), so metrics line up with its data.
    const sample: Sample = { t, step: ego.step[i]! };
    const accel = kinematics.frame(i, sample);
    const present: Present[] = [{ track: ego, k: i }];
    const others: Present[] = [];
    for (const track of tracks) {
      if (track === ego) continue;
      const k = track.indexAt(t, MAX_AGE);
      if (k < 0) continue;
      const other = { track, k };
      present.push(other);
      others.push(other);
    }
    const frame = {
      ego,
      i,
      t,
      x: ego.x[i]!,
      y: ego.y[i]!,
      yaw: ego.yaw[i]!,
      speed: ego.speed[i]!,
      accel,
      others,
      present,
      position: road ? positionOnRoad(road, ego, i) : undefined,
      sample,
    };
    for (const detector of detectors) detector.frame(frame);
    for (const m of LIMSIM_METRICS)
      if (typeof sample[m] === 'number') sample[`${m}Score`] = limsimScore(m, sample[m]);
    samples.push(sample);
    options.onFrame?.(sample);
    if (i % 500 === 0) options.onProgress?.(i / ego.t.length);
  }
  const end = ego.t[ego.t.length - 1]!;
  const found = detectors.flatMap((detector) => detector.finish(end)).sort((a, b) => a.t - b.t);
  for (const track of tracks) track.rewind();

  // What the simulator itself recorded (CARLA's recorder's collisions: `source` says who) stays beside
  // what the evaluator found, in the summary and in the stored stream.
  const recorded = await recordedEvents(store, runId);
  const events = [...found, ...recorded.map(asEvaluationEvent)].sort((a, b) => a.t - b.t);
  const limsimScores = meanLimsimScores(samples);
  const collided = events.some((e) => e.kind === 'collision' && e.actors.includes(actorId));
  const eventCounts: Record<string, number> = {};
  for (const e of events) eventCounts[e.kind] = (eventCounts[e.kind] ?? 0) + 1;

  const streams =
    options.store !== false
      ? await storeEvaluation(store, runId, actorId, mode, samples, found, recorded)
      : [];
  options.onProgress?.(1);
  return {
    run: run.id,
    actor: actorId,
    mode,
    frames: samples.length,
    gaps: kinematics.gaps,
    metrics: summarizeMetrics(samples),
    limsimScores,
    events,
    eventCounts,
    score: overallScore(limsimScores, collided),
    weights: { ...SCORE_WEIGHTS },
    skipped,
    streams,
  };
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
