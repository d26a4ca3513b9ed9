import { describeValue, invalid } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { ActorInfo } from '../../model/run.js';
import type { StreamDecl } from '../../model/stream.js';

/**
 * SODA.Sim's database layout (docs/formats/soda.md, "SODA.Sim's layout"): which
 * collections exist in each generation, and the constants its writers use.
 */

/** SODA.Sim's connection defaults (`USodaUserSettings` / `USodaMongoDBSettings`). */
export const SODA_DEFAULT_URL = 'mongodb://localhost:27017';
export const SODA_DEFAULT_DATABASE = 'sodasim';

/** SODA.Sim's `MaxDocsPerPart` (G1) and `GetMaxBatchSize()` (G3): rows per batch document per actor. */
export const MAX_ROWS_PER_BATCH = 10_000;
/** Below MongoDB's 16 MiB document limit with room for the envelope; SODA.Sim never gets near it. */
export const MAX_BATCH_BYTES = 15 * 1024 * 1024;

export const SODA_ACTOR_TYPES = ['ego', 'vehicle', 'pedestrian', 'opendrive'] as const;
export type SodaActorType = (typeof SODA_ACTOR_TYPES)[number];

/** `inputs.gear` in SODA.Sim: a gear state, not a gear number. */
export const SODA_GEARS = { neutral: 0, drive: 1, reverse: 2, park: 3 } as const;

/**
 * The canonical gear number (1.. forward, 0 neutral, -1 reverse) of a SODA.Sim gear state; undefined for
 * a state SODA.Sim does not define. Park holds the car, so it is no gear engaged.
 */
export function gearFromSodaState(state: number): number | undefined {
  if (state === SODA_GEARS.drive) return 1;
  if (state === SODA_GEARS.reverse) return -1;
  if (state === SODA_GEARS.neutral || state === SODA_GEARS.park) return 0;
  return undefined;
}

/**
 * The SODA.Sim gear state to write: the state a SODA import kept (`gearState`), else the one the gear
 * number implies (any forward gear is drive).
 */
export function sodaStateOfGear(gear: number | undefined, keptState: number | undefined): number {
  if (keptState !== undefined) return keptState;
  if (gear === undefined || gear === 0) return SODA_GEARS.neutral;
  return gear > 0 ? SODA_GEARS.drive : SODA_GEARS.reverse;
}
/** `wheels[].4wd_ind`: front-left, front-right, rear-left, rear-right. */
export const WHEEL_POSITIONS = ['fl', 'fr', 'rl', 'rr'] as const;

/** G3 `files.type`. */
export const FILE_TYPES = { vehicle: 0, vehicleComponent: 1, level: 2, actor: 3 } as const;

export type CollectionRole =
  | { role: 'datasets' | 'scenarios' | 'vehicles' | 'files' }
  /** `dataset12` (G1, G2: described by `datasets`) or `dataset_12` (G3: describes itself). */
  | { role: 'dataset'; id: number; selfDescribed: boolean };

/** What a collection is in SODA.Sim's layout, or undefined if SODA.Sim never writes it. */
export function collectionRole(name: string): CollectionRole | undefined {
  if (name === 'datasets' || name === 'scenarios' || name === 'vehicles' || name === 'files')
    return { role: name };
  const match = /^dataset(_?)(0|[1-9]\d{0,15})$/.exec(name);
  if (!match || !Number.isSafeInteger(Number(match[2]))) return undefined;
  return { role: 'dataset', id: Number(match[2]), selfDescribed: match[1] === '_' };
}

export const datasetCollection = (id: number): string => `dataset${id}`;

/**
 * What simrec knows that SODA.Sim's layout has no field for (the run's simulator, description and
 * metadata; each actor's kind, extents, attributes; each stream's declaration and the fields its
 * samples had), so that a run exported and imported again is the same run. It is one string field,
 * `simrec`, on the `datasets` document: SODA.Sim never reads datasets back, its users' queries do
 * not select it, and as a string it holds keys MongoDB would refuse as field names (dots, `$`).
 */
export const EXTENSION_FIELD = 'simrec';

export interface ExtensionStream {
  decl: StreamDecl;
  /** Fields that samples of the stream had; a field SODA.Sim's row always carries is dropped otherwise. */
  present: string[];
  /**
   * The samples' steps as runs of consecutive steps, [first, count], when they are not simply
   * 0, 1, 2...: SODA.Sim's ghost rows have no step field (an actor that appears at step 29 would
   * come back starting at 0).
   */
  steps?: [number, number][];
}

/** Steps as runs of consecutive values; undefined when they are 0, 1, 2... (what a reader assumes). */
export function stepRuns(steps: Iterable<number>): [number, number][] | undefined {
  const runs: [number, number][] = [];
  for (const step of steps) {
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === step) last[1]++;
    else runs.push([step, 1]);
  }
  return runs.length === 0 || (runs.length === 1 && runs[0]![0] === 0) ? undefined : runs;
}

/** The step of the index-th sample, from runs written by stepRuns. */
export function stepsFromRuns(runs: [number, number][]): number[] {
  const out: number[] = [];
  for (const [first, count] of runs) for (let k = 0; k < count; k++) out.push(first + k);
  return out;
}

export interface ExtensionEntry {
  /** The `actors[].name` it explains. */
  soda: string;
  /** The simrec actor; absent for run-level streams and for a road network without an actor. */
  actor?: ActorInfo;
  streams: ExtensionStream[];
}

export interface SimrecExtension {
  version: 1;
  run: { simulator: { name: string; version?: string }; description: string; metadata: JsonObject };
  entries: ExtensionEntry[];
}

export function parseExtension(text: unknown, where: string): SimrecExtension {
  if (typeof text !== 'string')
    throw invalid(`${where}.${EXTENSION_FIELD}: expected a string of JSON, got ${describeValue(text)}`);
  let value: SimrecExtension;
  try {
    value = JSON.parse(text) as SimrecExtension;
  } catch (error) {
    throw invalid(`${where}.${EXTENSION_FIELD}: not JSON: ${(error as Error).message}`);
  }
  if (value?.version !== 1 || typeof value.run !== 'object' || !Array.isArray(value.entries))
    throw invalid(
      `${where}.${EXTENSION_FIELD}: expected simrec's extension version 1 {version, run, entries}`,
    );
  return value;
}
