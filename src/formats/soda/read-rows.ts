import { invalid } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import { array, doc, double, int32, int64, string, toPlainJson, vec3, type BsonDoc } from './bson-fields.js';
import { gearFromSodaState, WHEEL_POSITIONS } from './soda-layout.js';
import { unrealToState, type Triple } from './unreal-frame.js';

/**
 * SODA.Sim's rows, every generation, read into canonical samples. G2 and G3 renamed the G1 fields
 * (CamelCase, typos of their own) and reordered the ego's rotator; the tables below name them so
 * that one reader serves all three and its errors quote the field as the document spells it.
 */
interface EgoNames {
  /** G2/G3 keep the pose in a sub-document. */
  pose?: string;
  simTs: string;
  renderTs: string;
  step: string;
  loc: string;
  rot: string;
  /** Where pitch, yaw and roll sit in `rot`. */
  rotIndex: { pitch: number; yaw: number; roll: number };
  vel: string;
  acc: string;
  angVel: string;
  load?: string;
  /** G2 nests inputs and wheels in a sub-document; G3 has them at the row's top level. */
  wheeled?: string;
  inputs: string;
  brake: string;
  steer: string;
  throttle: string;
  gear: string;
  wheels: string;
  wheel: {
    ind: string;
    angVel: string;
    reqTorq: string;
    reqBrakeTorq: string;
    steer: string;
    sus: string;
    longSlip: string;
    latSlip: string;
  };
}

const G1_EGO: EgoNames = {
  simTs: 'sim_ts',
  renderTs: 'render_ts',
  step: 'step',
  loc: 'loc',
  rot: 'rot',
  rotIndex: { pitch: 0, yaw: 1, roll: 2 },
  vel: 'vel',
  acc: 'acc',
  angVel: 'ang_vel',
  load: 'load',
  inputs: 'inputs',
  brake: 'break',
  steer: 'steer',
  throttle: 'throttle',
  gear: 'gear',
  wheels: 'wheels',
  wheel: {
    ind: '4wd_ind',
    angVel: 'ang_vel',
    reqTorq: 'req_torq',
    reqBrakeTorq: 'req_brake_torq',
    steer: 'steer',
    sus: 'sus',
    longSlip: 'long_slip',
    latSlip: 'lat_slip',
  },
};

const G2_EGO: EgoNames = {
  pose: 'VehicleData',
  simTs: 'SimTsUs',
  renderTs: 'RenderTsUs',
  step: 'Step',
  loc: 'Loc',
  rot: 'Rot',
  rotIndex: { roll: 0, pitch: 1, yaw: 2 },
  vel: 'Bel',
  acc: 'Acc',
  angVel: 'AngVel',
  wheeled: 'WheeledVehicleData',
  inputs: 'Inputs',
  brake: 'Break',
  steer: 'Steer',
  throttle: 'Throttle',
  gear: 'Gear',
  wheels: 'Wheels',
  wheel: {
    ind: 'Ind',
    angVel: 'AngVel',
    reqTorq: 'ReqTorq',
    reqBrakeTorq: 'ReqBrakeTorq',
    steer: 'Steer',
    sus: 'Sus',
    longSlip: 'LongSlip',
    latSlip: 'LatSlip',
  },
};

/** Samples of one row, by canonical stream name; `t` and `step` are filled in by the caller. */
export type RowFields = Map<string, Record<string, unknown>>;

function rotator(
  value: unknown,
  where: string,
  index: EgoNames['rotIndex'],
): { pitch: number; yaw: number; roll: number } {
  const r = vec3(value, where);
  return { pitch: r[index.pitch]!, yaw: r[index.yaw]!, roll: r[index.roll]! };
}

export interface RowTime {
  ts: number;
  step?: number;
}

/** An ego row: state, control and wheels, plus G2/G3 component sub-documents as streams of their own. */
export function readEgoRow(
  row: BsonDoc,
  where: string,
  pivotOffset?: Triple,
): RowTime & { fields: RowFields } {
  const g2 = 'VehicleData' in row;
  const n = g2 ? G2_EGO : G1_EGO;
  const pose = n.pose ? doc(row[n.pose], `${where}.${n.pose}`) : row;
  const at = n.pose ? `${where}.${n.pose}` : where;
  const ts = int64(pose[n.simTs], `${at}.${n.simTs}`);
  const step = int32(pose[n.step], `${at}.${n.step}`);
  const state: Record<string, unknown> = unrealToState(
    {
      loc: vec3(pose[n.loc], `${at}.${n.loc}`),
      rot: rotator(pose[n.rot], `${at}.${n.rot}`, n.rotIndex),
      vel: vec3(pose[n.vel], `${at}.${n.vel}`),
      acc: vec3(pose[n.acc], `${at}.${n.acc}`),
      angVel: vec3(pose[n.angVel], `${at}.${n.angVel}`),
    },
    pivotOffset,
  );
  state.renderT = int64(pose[n.renderTs], `${at}.${n.renderTs}`);
  const fields: RowFields = new Map([['state', state]]);
  const wheeledAt = n.wheeled && n.wheeled in row ? `${where}.${n.wheeled}` : where;
  const wheeled = n.wheeled && n.wheeled in row ? doc(row[n.wheeled], wheeledAt) : row;
  if (n.inputs in wheeled) {
    const i = doc(wheeled[n.inputs], `${wheeledAt}.${n.inputs}`);
    const ia = `${wheeledAt}.${n.inputs}`;
    const control: Record<string, unknown> = {
      throttle: double(i[n.throttle], `${ia}.${n.throttle}`),
      brake: double(i[n.brake], `${ia}.${n.brake}`),
      steer: double(i[n.steer], `${ia}.${n.steer}`),
    };
    // SODA.Sim records a gear state (drive, reverse...); the model's gear is a gear number.
    const gearState = int32(i[n.gear], `${ia}.${n.gear}`);
    const gear = gearFromSodaState(gearState);
    if (gear !== undefined) control.gear = gear;
    control.gearState = gearState;
    if (n.load && n.load in row) control.load = double(row[n.load], `${where}.${n.load}`);
    fields.set('control', control);
  }
  if (n.wheels in wheeled) {
    const wa = `${wheeledAt}.${n.wheels}`;
    const m = n.wheel;
    const wheels = array(wheeled[n.wheels], wa).map((value, k) => {
      const w = doc(value, `${wa}[${k}]`);
      const f = (key: string): number => double(w[key], `${wa}[${k}].${key}`);
      const ind = int32(w[m.ind], `${wa}[${k}].${m.ind}`);
      return {
        position: WHEEL_POSITIONS[ind] ?? `w${ind}`,
        angularVelocity: f(m.angVel),
        torque: f(m.reqTorq),
        brakeTorque: f(m.reqBrakeTorq),
        // Unreal steers clockwise seen from above, canonical counter-clockwise.
        steer: -f(m.steer) + 0,
        suspension: f(m.sus) / 100,
        slipLong: f(m.longSlip),
        slipLat: f(m.latSlip),
      };
    });
    fields.set('wheels', { wheels });
  }
  if (g2)
    for (const [key, value] of Object.entries(row)) {
      if (key === n.pose || key === n.wheeled || key === n.inputs || key === n.wheels) continue;
      // A component with bWriteDataset: its data as it came, under the component's name.
      const data = toPlainJson(value, `${where}.${key}`);
      fields.set(
        key,
        typeof data === 'object' && data !== null && !Array.isArray(data) ? data : { value: data },
      );
    }
  return { ts, step, fields };
}

/** A ghost vehicle's or pedestrian's row: `ts, loc, rot [pitch, yaw, roll], vel, (acc), route`. */
export function readGhostRow(
  row: BsonDoc,
  where: string,
  pivotOffset?: Triple,
): RowTime & { fields: RowFields } {
  const g2 = 'Ts' in row;
  const [tsKey, locKey, rotKey, velKey, accKey] = g2
    ? ['Ts', 'Loc', 'Rot', 'Vel', 'Acc']
    : ['ts', 'loc', 'rot', 'vel', 'acc'];
  const ts = int64(row[tsKey], `${where}.${tsKey}`);
  const vel = vec3(row[velKey], `${where}.${velKey}`);
  const acc = accKey in row ? vec3(row[accKey], `${where}.${accKey}`) : undefined;
  const state: Record<string, unknown> = unrealToState(
    {
      loc: vec3(row[locKey], `${where}.${locKey}`),
      rot: rotator(row[rotKey], `${where}.${rotKey}`, G1_EGO.rotIndex),
      vel,
      ...(acc ? { acc } : {}),
    },
    pivotOffset,
  );
  if ('route' in row) {
    const route = doc(row.route, `${where}.route`);
    // G2 and G3 spell it `Name` for vehicles and `name` for pedestrians.
    const key = 'Name' in route ? 'Name' : 'name';
    const name = string(route[key], `${where}.route.${key}`);
    if (name !== '') state.route = name;
  }
  return { ts, fields: new Map([['state', state]]) };
}

const TIME_KEYS = ['ts', 'Ts', 'sim_ts', 'SimTsUs', 'TimestampUs'] as const;

/** A row SODA.Sim's generic recorders wrote (or simrec wrote for a stream SODA.Sim has no type for). */
export function readGenericRow(
  row: BsonDoc,
  where: string,
): { ts?: number; step?: number; fields: JsonObject } {
  const out: { ts?: number; step?: number; fields: JsonObject } = { fields: {} };
  for (const [key, value] of Object.entries(row)) {
    if ((TIME_KEYS as readonly string[]).includes(key) && out.ts === undefined)
      out.ts = int64(value, `${where}.${key}`);
    else if (key === 'step') out.step = int32(value, `${where}.${key}`);
    else out.fields[key] = toPlainJson(value, `${where}.${key}`);
  }
  return out;
}

/** SODA.Sim's `extents` (G1) or `Extents` (G2, G3), centimetres from the pivot. */
export function readExtents(
  description: BsonDoc,
  where: string,
): { forward: number; backward: number; left: number; right: number; up: number; down: number } | undefined {
  const key = 'extents' in description ? 'extents' : 'Extents' in description ? 'Extents' : undefined;
  if (!key) return undefined;
  const e = doc(description[key], `${where}.${key}`);
  const upper = key === 'Extents';
  const get = (name: string): number => {
    const k = upper ? name[0]!.toUpperCase() + name.slice(1) : name;
    return double(e[k], `${where}.${key}.${k}`);
  };
  return {
    forward: get('forward'),
    backward: get('backward'),
    left: get('left'),
    right: get('right'),
    up: get('up'),
    down: get('down'),
  };
}

export function checkBatchRows(batch: unknown, where: string, limit: number): unknown[] {
  const rows = array(batch, where);
  if (rows.length > limit)
    throw invalid(
      `${where}: ${rows.length} rows in one batch; SODA.Sim writes at most ${limit} per actor per part`,
    );
  return rows;
}
