import type { ColumnInput, FrameInput } from '../../model/columns.js';
import { sumoAngleToYaw, sumoFrontToCentre } from '../../model/units.js';
import type { SubscriptionResult } from './traci-client.js';
import { VAR, type ContextColumn } from './traci-protocol.js';
import { num } from './sumo-variables.js';

/**
 * Which vehicles to record: all; those within `radius` of the ego (LimSim's ego tracking: AoI within
 * half the radius, outOfAoI beyond); or those within 2 x `radius` of a fixed point (LimSim's fixed
 * scene: AoI within the radius, outOfAoI beyond).
 */
export type SumoArea =
  { kind: 'all' } | { kind: 'ego'; radius: number } | { kind: 'local'; x: number; y: number; radius: number };

/** The frame's numeric columns, moved together when rows out of the area are dropped. */
const NUMBER_COLUMNS = ['x', 'y', 'z', 'yaw', 'speed', 'accel', 'lanePos', 'routeIdx', 'signals'] as const;

/**
 * A step's state columns, kept from step to step: appendFrame copies a frame's values, so the recorder
 * fills the same arrays at every step instead of making a dozen a step.
 */
export class StepColumns {
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
   * keepArea, rather than the body of the recorder's step: V8 compiled that whole step again and again in
   * a run (deoptimised as new paths were reached), each time long, on the other core.
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
export function lightSignals(
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
