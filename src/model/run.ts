import { describeValue, invalid } from './errors.js';
import { checkJsonValue, type JsonObject } from './json.js';

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
  actors: number;
  streams: number;
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
  const actor: ActorInfo = { id: decl.id, kind: decl.kind, record: decl.record ?? true, attributes, options };
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
