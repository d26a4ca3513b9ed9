import { describeValue, invalid } from './errors.js';
import { checkJsonValue, copyJsonValue, type JsonObject } from './json.js';

/** Why a run ended. The first six are SODA.Sim's; others are accepted as given (lower_snake_case). */
export const KNOWN_END_REASONS = [
  'user_request',
  'scenario_stop_trigger',
  'inner_error',
  'quit_application',
  'interrupted',
  'completed',
] as const;
export type EndReason = (typeof KNOWN_END_REASONS)[number] | (string & {});

/** How a run ended, in words, for people (the viewer); a reason not known here reads as it is written. */
const END_REASON_WORDS: Record<(typeof KNOWN_END_REASONS)[number], string> = {
  user_request: 'stopped by the user',
  scenario_stop_trigger: "ended by the scenario's stop trigger",
  inner_error: 'ended by an error in the simulator',
  quit_application: 'ended when the simulator quit',
  interrupted: 'interrupted (the recorder stopped without ending it)',
  completed: 'completed',
};

export function endReasonInWords(reason: string): string {
  return (END_REASON_WORDS as Record<string, string>)[reason] ?? reason.replaceAll('_', ' ');
}

export interface SimulatorInfo {
  name: string;
  version?: string;
}

/** What a recorder says about a run when it begins one. */
export interface RunInit {
  simulator?: SimulatorInfo;
  description?: string;
  /** Free metadata: town, weather, seeds, suite, mode, note... Any JSON. */
  metadata?: JsonObject;
  /** Start of the run, microseconds since the Unix epoch. Defaults to now. */
  begin?: number;
}

export type RunState = 'recording' | 'closed';

export interface RunInfo {
  id: number;
  /** Microseconds since the Unix epoch. */
  begin: number;
  /** Microseconds since the Unix epoch; null while recording. */
  end: number | null;
  endReason: EndReason | null;
  state: RunState;
  simulator: SimulatorInfo;
  description: string;
  metadata: JsonObject;
}

/** A run with the counts `simrec ls` shows. */
export interface RunSummary extends RunInfo {
  /** How many actors and streams (counts: `actors` and `streams` are always the lists themselves). */
  actorCount: number;
  streamCount: number;
  samples: number;
}

export const ACTOR_KINDS = [
  'ego',
  'vehicle',
  'pedestrian',
  'cyclist',
  'traffic_light',
  'sensor',
  'map',
  'static',
  'other',
] as const;
export type ActorKind = (typeof ACTOR_KINDS)[number] | (string & {});

/** Bounding box extents in metres. */
export interface Extents {
  length: number;
  width: number;
  height: number;
}

export interface ActorDecl {
  /** Unique within its run. */
  id: string;
  kind: ActorKind;
  /** The simulator's own class or blueprint name, e.g. `vehicle.tesla.model3`. */
  sourceClass?: string;
  extents?: Extents;
  /** Static attributes: mass, wheels, vehicle type, limits, route... Any JSON. */
  attributes?: JsonObject;
  /** The per-actor recording switch: samples of an actor with `record: false` are accepted and dropped. */
  record?: boolean;
  /** Recording options a simulator passes per actor (rates, sensors to keep...). */
  options?: JsonObject;
}

export interface ActorInfo extends Required<Pick<ActorDecl, 'id' | 'kind' | 'record'>> {
  sourceClass?: string;
  extents?: Extents;
  attributes: JsonObject;
  options: JsonObject;
  /**
   * When the actor was in the run, in time order and disjoint. Absent for actors recorded before
   * simrec kept presence (schema 2 stores): then only the staleness rule of sceneAt applies.
   */
  presence?: PresenceInterval[];
}

/**
 * One stretch of an actor's presence, microseconds: present at t when `from <= t < to`. `to` is null
 * while no one has said the actor left (it is then present to the end of the run, unless its samples
 * go stale: see sceneAt).
 */
export interface PresenceInterval {
  from: number;
  to: number | null;
}

/** An actor's whole presence, as a recorder hands it to the store (replacing what was there). */
export interface ActorPresence {
  actor: string;
  intervals: PresenceInterval[];
}

/** The interval of `intervals` that holds t, if any (intervals sorted, disjoint). */
export function presenceAt(intervals: readonly PresenceInterval[], t: number): PresenceInterval | undefined {
  for (let i = intervals.length - 1; i >= 0; i--) {
    const iv = intervals[i]!;
    if (iv.from <= t) return iv.to === null || t < iv.to ? iv : undefined;
  }
  return undefined;
}

/** Checks intervals a caller hands over: integer microseconds, each ending after it begins, in order. */
export function checkPresence(actor: string, intervals: unknown): PresenceInterval[] {
  const where = `actor ${JSON.stringify(actor)} presence`;
  if (!Array.isArray(intervals))
    throw invalid(`${where}: expected an array of {from, to}, got ${describeValue(intervals)}`);
  const out: PresenceInterval[] = [];
  let previousEnd: number | null = -Infinity;
  intervals.forEach((iv: unknown, i) => {
    const at = `${where}[${i}]`;
    if (typeof iv !== 'object' || iv === null)
      throw invalid(`${at}: expected {from, to}, got ${describeValue(iv)}`);
    const { from, to } = iv as { from: unknown; to: unknown };
    checkMicros(from, `${at}.from`);
    if (to !== null && to !== undefined) {
      checkMicros(to, `${at}.to`);
      if (to <= from) throw invalid(`${at}.to: expected a time after from (${from}), got ${to}`);
    }
    if (previousEnd === null)
      throw invalid(`${at}: the interval before it never ends (to: null); only the last may be open`);
    if (from < previousEnd)
      throw invalid(
        `${at}.from: expected no earlier than the previous interval's end (${previousEnd}), got ${from}`,
      );
    previousEnd = to ?? null;
    out.push({ from, to: to ?? null });
  });
  return out;
}

const nowMicros = (): number => Date.now() * 1000;

export function normalizeRunInit(init: RunInit = {}): Omit<RunInfo, 'id'> {
  const where = 'run';
  const begin = init.begin ?? nowMicros();
  checkMicros(begin, `${where}.begin`);
  const simulator = init.simulator ?? { name: 'unknown' };
  if (typeof simulator.name !== 'string' || simulator.name === '')
    throw invalid(
      `${where}.simulator.name: expected a non-empty string, got ${describeValue(simulator.name)}`,
    );
  if (simulator.version !== undefined && typeof simulator.version !== 'string')
    throw invalid(`${where}.simulator.version: expected a string, got ${describeValue(simulator.version)}`);
  if (init.description !== undefined && typeof init.description !== 'string')
    throw invalid(`${where}.description: expected a string, got ${describeValue(init.description)}`);
  const metadata = init.metadata ?? {};
  checkJsonObject(metadata, `${where}.metadata`);
  return {
    begin,
    end: null,
    endReason: null,
    state: 'recording',
    simulator: simulator.version === undefined ? { name: simulator.name } : { ...simulator },
    description: init.description ?? '',
    metadata,
  };
}

export function checkEndReason(reason: unknown): EndReason {
  if (typeof reason !== 'string' || !/^[a-z][a-z0-9_]*$/.test(reason))
    throw invalid(
      `end reason: expected lower_snake_case such as ${KNOWN_END_REASONS.join(', ')}; got ${describeValue(reason)}`,
    );
  return reason;
}

export function normalizeActor(decl: ActorDecl): ActorInfo {
  const where = `actor ${describeValue(decl?.id)}`;
  if (typeof decl !== 'object' || decl === null)
    throw invalid(`actor: expected an object, got ${describeValue(decl)}`);
  if (typeof decl.id !== 'string' || decl.id === '')
    throw invalid(`actor.id: expected a non-empty string, got ${describeValue(decl.id)}`);
  if (typeof decl.kind !== 'string' || !/^[a-z][a-z0-9_]*$/.test(decl.kind))
    throw invalid(
      `${where}.kind: expected lower_snake_case such as ${ACTOR_KINDS.join(', ')}; got ${describeValue(decl.kind)}`,
    );
  if (decl.sourceClass !== undefined && typeof decl.sourceClass !== 'string')
    throw invalid(`${where}.sourceClass: expected a string, got ${describeValue(decl.sourceClass)}`);
  if (decl.extents !== undefined) {
    for (const key of ['length', 'width', 'height'] as const) {
      const v = decl.extents[key];
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
        throw invalid(`${where}.extents.${key}: expected a finite number >= 0 (m), got ${describeValue(v)}`);
    }
  }
  if (decl.record !== undefined && typeof decl.record !== 'boolean')
    throw invalid(`${where}.record: expected a boolean, got ${describeValue(decl.record)}`);
  const attributes = decl.attributes ?? {};
  checkJsonObject(attributes, `${where}.attributes`);
  const options = decl.options ?? {};
  checkJsonObject(options, `${where}.options`);
  // Copies: the recorder writes an actor after the commit in flight, and its caller may change its
  // objects meanwhile (json.ts copyJsonValue).
  const actor: ActorInfo = {
    id: decl.id,
    kind: decl.kind,
    record: decl.record ?? true,
    attributes: copyJsonValue(attributes) as JsonObject,
    options: copyJsonValue(options) as JsonObject,
  };
  if (decl.sourceClass !== undefined) actor.sourceClass = decl.sourceClass;
  if (decl.extents !== undefined)
    actor.extents = { length: decl.extents.length, width: decl.extents.width, height: decl.extents.height };
  return actor;
}

export function checkMicros(value: unknown, where: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value))
    throw invalid(`${where}: expected an integer number of microseconds, got ${describeValue(value)}`);
}

function checkJsonObject(value: unknown, where: string): asserts value is JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(`${where}: expected an object, got ${describeValue(value)}`);
  checkJsonValue(value, where);
}
