import type { JsonObject } from '../../model/json.js';
import type { EndReason } from '../../model/run.js';
import { SIGNAL_STREAM, STATE_FIELDS } from '../../model/standard-streams.js';
import type { RunRecorder } from '../../record/run-recorder.js';
import type { SumoProcess } from './sumo-process.js';
import { lightSignals, StepColumns, type SumoArea } from './sumo-step-columns.js';
import { ARRIVAL_VARS, num, TYPE_VARS, VEHICLE_ONCE_VARS, vehicleAttributes } from './sumo-variables.js';
import type { SubscriptionResult, TraciClient } from './traci-client.js';
import { VAR, type TraciValue } from './traci-protocol.js';

/** How far (wall time) recording may run ahead of what is known durable. */
const BACKLOG_MS = 1000;
/**
 * Steps sent ahead of the one being recorded. SUMO reads its messages in order, so it goes from one
 * step to the next without waiting for this process (a round trip per step cost half its speed). With
 * the recorder below SUMO's priority, 16 steps ran out while this process waited for a core, and SUMO
 * waited in turn: 32 measured faster, 64 little more (performance-history.md). But a vehicle's route and
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

/** How the simulation is stepped and what of it is recorded. */
export interface SteppingPlan {
  /** Seconds per step (SUMO's). */
  dt: number;
  area: SumoArea;
  /** The vehicle recorded as the ego. */
  ego: string | undefined;
  /** The simulation's begin and end times (seconds), and the seconds to record at most. */
  simBegin: number;
  simEnd: number | undefined;
  duration: number | undefined;
  /** The seconds the recording will last, when known (for onStep). */
  totalSeconds: number | undefined;
  onStep?: (simSeconds: number, totalSeconds: number | undefined) => void;
  signal?: AbortSignal;
}

/**
 * The stepping loop: steps sent ahead to SUMO, each answered step's new vehicles described (route, type),
 * then the step recorded in order: its states, lights, departures and arrivals, with durability awaited
 * only for what is a second old. Ends when SUMO does, at the end time or the duration, or when aborted.
 */
export class SumoStepping {
  /** Steps recorded. */
  steps = 0;
  /** Persons that departed. */
  persons = 0;
  /** Actors declared (when first in the area). */
  readonly declared = new Set<string>();
  /** Each vehicle type's limits, size and class, by type id: asked once. */
  readonly types = new Map<string, Promise<Map<number, TraciValue>>>();
  /** Vehicles gone before their route and type could be asked (they lived less than the steps in flight). */
  readonly undescribed: string[] = [];
  readonly inFlightSteps: number;

  private readonly client: TraciClient;
  private readonly rec: RunRecorder;
  private readonly sumo: SumoProcess;
  private readonly plan: SteppingPlan;
  private readonly departedAttributes = new Map<string, JsonObject>();
  private readonly shapes = new Map<string, { length: number; width: number }>();
  private readonly scratch = new StepColumns();
  /**
   * Appends not yet known durable, with when they were made: the loop waits only for those older
   * than a second (long committed unless the disk is behind), so SUMO never waits on the commit
   * timer, while a simulator far ahead of the disk is still slowed, not buffered without bound.
   * A step's appends share their commit's promise with the other steps of that commit, so each
   * promise is kept once, when first seen: an entry (and a Promise.all) per step held a second of
   * steps alive through the recording thread's young collections.
   */
  private readonly unconfirmed: { at: number; durable: Promise<unknown> }[] = [];

  constructor(client: TraciClient, rec: RunRecorder, sumo: SumoProcess, plan: SteppingPlan) {
    this.client = client;
    this.rec = rec;
    this.sumo = sumo;
    this.plan = plan;
    this.inFlightSteps = stepsInFlight(plan.dt);
  }

  /** Steps and records the simulation to its end; says why it ended. */
  async run(): Promise<EndReason> {
    const { client, plan, inFlightSteps } = this;
    const { dt, simBegin, simEnd } = plan;
    // Steps are sent ahead only up to the end, so that SUMO simulates (and writes in its own outputs)
    // no step the run does not record: to its end time, whose last state begins one step before it,
    // or to --duration, whose last state begins at it.
    const stepsToEnd = simEnd === undefined ? Infinity : Math.round((simEnd - simBegin) / dt);
    const stepsToDuration = plan.duration === undefined ? Infinity : Math.round(plan.duration / dt) + 1;
    const maxSteps = Math.min(stepsToEnd, stepsToDuration);
    const lastStepReason: EndReason = stepsToDuration < stepsToEnd ? 'user_request' : 'completed';
    const inFlight: Promise<SubscriptionResult[]>[] = [];
    let issued = 0;
    /** Steps answered, waiting (in order) for their new vehicles' route and type before being recorded. */
    const waiting: { results: SubscriptionResult[]; described: Promise<void>; settled: boolean }[] = [];

    let ended: EndReason | undefined;
    /** SUMO has answered its last step (it ended, or every step asked for was answered). */
    let answeredAll = false;
    while (ended === undefined) {
      if (plan.signal?.aborted) {
        ended = 'user_request';
        break;
      }
      while (inFlight.length < inFlightSteps && issued < maxSteps) {
        const next = client.simulationStep();
        void next.catch(() => {}); // a step sent past SUMO's end: its failure is read in its turn
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
        await this.sumo.exitedWithin(2000);
        if (this.sumo.exited?.code !== 0) {
          ended = 'interrupted';
          this.sumo.noteFailure((error as Error).message);
        }
        answeredAll = true;
        break;
      }
      const entry = { results, described: this.describe(results), settled: false };
      // Fire and forget: describe never rejects (a question that fails leaves its vehicle undescribed).
      void entry.described.then(() => (entry.settled = true));
      waiting.push(entry);
      // Record, in order, every step whose new vehicles are described; never wait for the rest.
      while (ended === undefined && waiting.length && (waiting[0]!.settled || !inFlight.length)) {
        const head = waiting.shift()!;
        await head.described;
        ended = await this.record(head.results);
      }
    }
    // The steps SUMO answered before it ended (or before the last asked for) are recorded too.
    while (answeredAll && waiting.length && (ended === undefined || ended === 'interrupted')) {
      const head = waiting.shift()!;
      await head.described;
      const stop = await this.record(head.results);
      if (stop && ended === undefined) ended = stop;
      if (stop) break;
    }
    // Every step asked for was recorded (float times may fall a hair short of the end's test).
    return ended ?? (issued >= maxSteps ? lastStepReason : 'completed');
  }

  /** Keeps an append's promise to be awaited once it is a second old (see `unconfirmed`). */
  private confirm(durable: Promise<unknown> | undefined, at: number): void {
    const { unconfirmed } = this;
    if (durable === undefined || durable === unconfirmed.at(-1)?.durable) return;
    void durable.catch(() => {}); // surfaced below, when its turn to be awaited comes
    unconfirmed.push({ at, durable });
  }

  /**
   * A step's departures: each new vehicle's route and type, and each new type's limits and size,
   * asked once. The questions go behind the steps already in flight and are answered after them.
   */
  private async describe(results: SubscriptionResult[]): Promise<void> {
    const { client, types, shapes, departedAttributes } = this;
    const simValues = results.find((r) => r.domain === 'simulation')?.values;
    const departed = (simValues?.get(VAR.DEPARTED_VEHICLES_IDS) as string[] | undefined) ?? [];
    this.persons += ((simValues?.get(VAR.DEPARTED_PERSONS_IDS) as string[] | undefined) ?? []).length;
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
          this.undescribed.push(id);
        }
      }),
    );
  }

  /** Records one step's states, lights, departures and arrivals; says whether the run ends here. */
  private async record(results: SubscriptionResult[]): Promise<EndReason | undefined> {
    const { rec, plan, scratch, declared, departedAttributes, unconfirmed } = this;
    const { dt, area, simBegin, simEnd } = plan;
    const begin = rec.run.begin;
    const steps = ++this.steps;
    const simValues = results.find((r) => r.domain === 'simulation')?.values;
    const now = num(simValues?.get(VAR.TIME)) ?? steps * dt;
    // The state after a step is the state of the step that began at now - dt (SUMO's fcd label).
    const t = begin + Math.round((now - dt) * 1e6);
    const step = Math.round((now - dt) / dt);
    // Every vehicle and person on the road into the step's columns (StepColumns.fill).
    const { lengths, widths, isPerson, typeIds } = scratch;
    scratch.fill(results, this.shapes);
    const lights = lightSignals(results, now, now - dt);
    const newActors: {
      id: string;
      kind: string;
      extents: { length: number; width: number; height: number };
      attributes: JsonObject;
    }[] = [];
    // The area: the rows kept, tagged as LimSim tags them; an actor is declared when first kept
    // (vehicles out of the area are declared when they enter it, long after they departed).
    scratch.keepArea(area, plan.ego, (id, row) => {
      if (declared.has(id)) return;
      declared.add(id);
      newActors.push({
        id,
        kind: id === plan.ego ? 'ego' : isPerson[row] ? 'pedestrian' : 'vehicle',
        extents: { length: lengths[row]!, width: widths[row]!, height: isPerson[row] ? 1.8 : 1.5 },
        attributes: departedAttributes.get(id) ?? { vType: String(typeIds[row] ?? '') },
      });
      departedAttributes.delete(id);
    });
    const ids = scratch.ids;
    // Known to the recorder at once, stored before this step's samples, not waited for here (awaiting
    // each departure's declarations held the whole recording up).
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
        // Fire and forget: the leave joins the step's commit, whose durability the step's appends await.
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
    this.confirm(declaring, wall);
    this.confirm(stateFrame, wall);
    if (lights.actors.length)
      this.confirm(
        rec.appendFrame(SIGNAL_STREAM, { t, step, actors: lights.actors, columns: lights.columns }),
        wall,
      );
    while (unconfirmed.length && wall - unconfirmed[0]!.at > BACKLOG_MS) await unconfirmed.shift()!.durable;
    plan.onStep?.(now - dt - simBegin, plan.totalSeconds);
    if (num(simValues?.get(VAR.MIN_EXPECTED_VEHICLES)) === 0 && steps > 1) return 'completed';
    // As SUMO itself ends: its last state is the step that begins one step before the end.
    if (simEnd !== undefined && now >= simEnd - dt / 2) return 'completed';
    if (plan.duration !== undefined && now - dt - simBegin >= plan.duration) return 'user_request';
    return undefined;
  }
}
