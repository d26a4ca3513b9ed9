import { invalid } from '../../../model/errors.js';
import type { JsonObject } from '../../../model/json.js';
import { SIMREC_REFERENCE_TYPE } from './osi-ground-truth.js';

/*
 * ASAM OSI ground truth (GroundTruth, or a SensorView's global_ground_truth) as simrec's actors and
 * states, whichever file it comes from: an MCAP trace (read-mcap.ts) or a .osi trace file (../osi).
 */

interface OsiVector {
  x?: number;
  y?: number;
  z?: number;
}
interface OsiBase {
  dimension?: { length?: number; width?: number; height?: number } | null;
  position?: OsiVector | null;
  orientation?: { roll?: number; pitch?: number; yaw?: number } | null;
  velocity?: OsiVector | null;
  acceleration?: OsiVector | null;
  orientation_rate?: { roll?: number; pitch?: number; yaw?: number } | null;
}
/** OSI's enums come by name (the file's own schema decodes them), or by number from older readers. */
type OsiEnum = string | number;
interface OsiObject {
  id?: { value?: number };
  type?: OsiEnum;
  base?: OsiBase | null;
  vehicle_classification?: {
    type?: OsiEnum;
    role?: OsiEnum;
    light_state?: Record<string, OsiEnum> | null;
  } | null;
  model_reference?: string;
  source_reference?: { type?: string; identifier?: string[] }[];
}
interface OsiTrafficLight {
  id?: { value?: number };
  base?: OsiBase | null;
  classification?: { color?: OsiEnum; icon?: OsiEnum; mode?: OsiEnum; counter?: number } | null;
  source_reference?: { type?: string; identifier?: string[] }[];
}
interface OsiTrafficSign {
  id?: { value?: number };
  main_sign?: {
    base?: OsiBase | null;
    classification?: { type?: OsiEnum; value?: { value?: number; value_unit?: OsiEnum } | null } | null;
  } | null;
  source_reference?: { type?: string; identifier?: string[] }[];
}
export interface GroundTruthMessage {
  timestamp?: { seconds?: number; nanos?: number } | null;
  host_vehicle_id?: { value?: number } | null;
  moving_object?: OsiObject[];
  stationary_object?: OsiObject[];
  traffic_light?: OsiTrafficLight[];
  traffic_sign?: OsiTrafficSign[];
}
export interface SensorViewMessage {
  timestamp?: { seconds?: number; nanos?: number } | null;
  host_vehicle_id?: { value?: number } | null;
  global_ground_truth?: GroundTruthMessage | null;
}

/**
 * The world a decoded message holds: a GroundTruth itself, or a SensorView's global ground truth (the
 * world as the simulation has it), which a SensorView read for it must have.
 */
export function worldOf(decoded: JsonObject, sensorView: boolean, where: string): GroundTruthMessage {
  if (!sensorView) return decoded;
  const gt = (decoded as SensorViewMessage).global_ground_truth;
  if (!gt)
    throw invalid(`${where}: a SensorView without global_ground_truth; simrec reads the world from it`);
  return gt;
}

/** OSI's MovingObject.Type, by name or number (3.x: 0 unknown, 1 other, 2 vehicle, 3 pedestrian, 4 animal). */
const MOVING_KIND: Record<string, string> = {
  TYPE_VEHICLE: 'vehicle',
  TYPE_PEDESTRIAN: 'pedestrian',
  TYPE_ANIMAL: 'animal',
  '2': 'vehicle',
  '3': 'pedestrian',
  '4': 'animal',
};
const CYCLES = new Set(['TYPE_BICYCLE', 'TYPE_MOTORBIKE', 'TYPE_STANDUP_SCOOTER']);

const idOf = (
  prefix: string,
  o: { id?: { value?: number }; source_reference?: { type?: string; identifier?: string[] }[] },
): string =>
  o.source_reference?.find((r) => r.type === SIMREC_REFERENCE_TYPE)?.identifier?.[0] ??
  `${prefix}${o.id!.value}`;

/** A base's pose, velocity, acceleration and orientation rate as a state (at the ground under the box). */
function baseState(base: OsiBase): Record<string, number> {
  const p = base.position!;
  const height = base.dimension?.height ?? 0;
  const r = base.orientation;
  const v = base.velocity;
  const a = base.acceleration;
  const w = base.orientation_rate;
  return {
    x: p.x ?? 0,
    y: p.y ?? 0,
    z: (p.z ?? 0) - height / 2,
    roll: r?.roll ?? 0,
    pitch: r?.pitch ?? 0,
    yaw: r?.yaw ?? 0,
    // simrec's speed is signed along the heading (negative reversing): the velocity projected on it.
    ...(v
      ? {
          vx: v.x ?? 0,
          vy: v.y ?? 0,
          vz: v.z ?? 0,
          speed: (v.x ?? 0) * Math.cos(r?.yaw ?? 0) + (v.y ?? 0) * Math.sin(r?.yaw ?? 0),
        }
      : {}),
    ...(a ? { ax: a.x ?? 0, ay: a.y ?? 0, az: a.z ?? 0 } : {}),
    ...(w ? { wx: w.roll ?? 0, wy: w.pitch ?? 0, wz: w.yaw ?? 0 } : {}),
  };
}

const sizeOf = (base: OsiBase): { x: number; y: number; z: number } | undefined => {
  const d = base.dimension;
  return d ? { x: d.length ?? 0, y: d.width ?? 0, z: d.height ?? 0 } : undefined;
};

/**
 * An OSI GroundTruth's objects as actors and states: moving objects (vehicles, or cyclists for a
 * bicycle or motorbike; pedestrians; animals; the host vehicle is the ego), stationary ones
 * (`static`), traffic lights (a bulb each, its colour, icon and mode in its state) and traffic signs
 * (`traffic_sign`), each named by its simrec id where simrec wrote the file (`org.simrec.id`), else
 * `osi-<id>`; OSI places an object at its box's centre, simrec at the ground under it.
 */
export function groundTruthObjects(gt: GroundTruthMessage, host: number | undefined) {
  const out: {
    id: string;
    osiId: number;
    kind: string;
    state: Record<string, number | string>;
    size?: { x: number; y: number; z: number };
    attributes: JsonObject;
  }[] = [];
  for (const [list, moving] of [
    [gt.moving_object ?? [], true],
    [gt.stationary_object ?? [], false],
  ] as const)
    for (const o of list) {
      if (!o.base?.position || o.id?.value === undefined) continue;
      const vc = o.vehicle_classification;
      const type = String(o.type ?? '');
      let kind = !moving ? 'static' : o.id.value === host ? 'ego' : (MOVING_KIND[type] ?? 'other');
      if (kind === 'vehicle' && CYCLES.has(String(vc?.type ?? ''))) kind = 'cyclist';
      const state: Record<string, number | string> = baseState(o.base);
      // Light states (indicators, brake lights...) change over a run: they are part of the state.
      for (const [name, value] of Object.entries(vc?.light_state ?? {}))
        if (value !== null && value !== undefined) state[`light_${name}`] = value;
      const attributes: JsonObject = { osiId: o.id.value };
      if (moving && o.type !== undefined) attributes.osiType = o.type;
      if (vc?.type !== undefined) attributes.vehicleType = vc.type;
      if (vc?.role !== undefined) attributes.role = vc.role;
      if (o.model_reference) attributes.modelReference = o.model_reference;
      const size = sizeOf(o.base);
      out.push({
        id: idOf('osi-', o),
        osiId: o.id.value,
        kind,
        state,
        attributes,
        ...(size ? { size } : {}),
      });
    }
  for (const light of gt.traffic_light ?? []) {
    if (!light.base?.position || light.id?.value === undefined) continue;
    const c = light.classification;
    const state: Record<string, number | string> = baseState(light.base);
    if (c?.color !== undefined) state.color = c.color;
    if (c?.icon !== undefined) state.icon = c.icon;
    if (c?.mode !== undefined) state.mode = c.mode;
    if (c?.counter !== undefined) state.counter = c.counter;
    const size = sizeOf(light.base);
    // A bulb each: simrec's own export names the signal head its three bulbs share, so not by that.
    const head = light.source_reference?.find((r) => r.type === SIMREC_REFERENCE_TYPE)?.identifier?.[0];
    out.push({
      id: `osi-light-${light.id.value}`,
      osiId: light.id.value,
      kind: 'traffic_light',
      state,
      attributes: { osiId: light.id.value, ...(head ? { head } : {}) },
      ...(size ? { size } : {}),
    });
  }
  for (const sign of gt.traffic_sign ?? []) {
    const base = sign.main_sign?.base;
    if (!base?.position || sign.id?.value === undefined) continue;
    const c = sign.main_sign?.classification;
    const attributes: JsonObject = { osiId: sign.id.value };
    if (c?.type !== undefined) attributes.signType = c.type;
    if (c?.value?.value !== undefined) attributes.value = c.value.value;
    if (c?.value?.value_unit !== undefined) attributes.unit = c.value.value_unit;
    const size = sizeOf(base);
    out.push({
      id: idOf('osi-sign-', sign),
      osiId: sign.id.value,
      kind: 'traffic_sign',
      state: baseState(base),
      attributes,
      ...(size ? { size } : {}),
    });
  }
  return out;
}
