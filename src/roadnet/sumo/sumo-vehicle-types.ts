import { readFile } from 'node:fs/promises';
import { describeValue, invalid, SimrecError } from '../../model/errors.js';
import { childrenNamed, XmlSource, type XmlElement } from '../xml/xml-source.js';

/*
 * SUMO's vehicle types (`<vType>`, in route and additional files) and its defaults for what a type leaves
 * out: the demo drives vehicles by them, and the FCD importer places a vehicle's centre by its length.
 */

/** A SUMO `<vType>`, with SUMO's defaults for what it leaves out. */
export interface VehicleType {
  id: string;
  vClass: string;
  /** Metres. */
  length: number;
  width: number;
  height: number;
  minGap: number;
  /** m/s^2. */
  accel: number;
  decel: number;
  emergencyDecel: number;
  /** m/s. */
  maxSpeed: number;
  /** s. */
  tau: number;
  /** SUMO's `speedFactor`: a truncated normal around `mean`. */
  speedFactor: { mean: number; deviation: number; min: number; max: number };
}

/** SUMO's dimensions and limits by vehicle class (its vClass defaults, abridged). */
const CLASS_DEFAULTS: Record<string, Partial<VehicleType>> = {
  // A person's and a container's types (SUMO's DEFAULT_PEDTYPE and DEFAULT_CONTAINERTYPE).
  pedestrian: { length: 0.215, width: 0.478, height: 1.719, maxSpeed: 10.44, accel: 1.5, decel: 2 },
  ignoring: { length: 6.1, width: 2.4, height: 2.6 },
  passenger: { length: 5, width: 1.8, height: 1.5, maxSpeed: 55.56, accel: 2.6, decel: 4.5 },
  taxi: { length: 5, width: 1.8, height: 1.5 },
  bus: { length: 12, width: 2.5, height: 3.4, maxSpeed: 27.78, accel: 1.2, decel: 4 },
  coach: { length: 14, width: 2.6, height: 4, maxSpeed: 27.78, accel: 2, decel: 4 },
  truck: { length: 7.1, width: 2.4, height: 2.4, maxSpeed: 36.11, accel: 1.3, decel: 4 },
  trailer: { length: 16.5, width: 2.55, height: 4, maxSpeed: 36.11, accel: 1.1, decel: 4 },
  delivery: { length: 6.5, width: 2.16, height: 2.86 },
  motorcycle: { length: 2.2, width: 0.9, height: 1.5, maxSpeed: 55.56, accel: 6, decel: 10 },
  bicycle: { length: 1.6, width: 0.65, height: 1.7, maxSpeed: 5.56, accel: 1.2, decel: 3 },
};

export function defaultVehicleType(id = 'DEFAULT_VEHTYPE', vClass = 'passenger'): VehicleType {
  return {
    id,
    vClass,
    length: 5,
    width: 1.8,
    height: 1.5,
    minGap: 2.5,
    accel: 2.6,
    decel: 4.5,
    emergencyDecel: 9,
    maxSpeed: 55.56,
    tau: 1,
    speedFactor: { mean: 1, deviation: 0.1, min: 0.2, max: 2 },
    ...CLASS_DEFAULTS[vClass],
  };
}

function speedFactor(source: XmlSource, element: XmlElement): VehicleType['speedFactor'] | undefined {
  const raw = element.attrs.speedFactor;
  if (raw === undefined) return undefined;
  const normc = /^\s*norm(?:c)?\(([^)]*)\)\s*$/.exec(raw);
  const parts = normc ? normc[1]!.split(',').map(Number) : [Number(raw)];
  if (parts.some((p) => !Number.isFinite(p)) || parts.length === 0)
    throw source.error(
      element,
      'speedFactor',
      `expected a number or normc(mean, dev, min, max), got ${describeValue(raw)}`,
    );
  const [mean, deviation = normc ? 0.1 : 0, min = 0.2, max = 2] = parts as [number, ...number[]];
  return { mean, deviation, min, max };
}

export function readVehicleType(source: XmlSource, element: XmlElement): VehicleType {
  const id = source.required(element, 'id');
  const type = defaultVehicleType(id, element.attrs.vClass ?? 'passenger');
  const numeric = [
    ['length', 'length', 0],
    ['width', 'width', 0],
    ['height', 'height', 0],
    ['minGap', 'minGap', -1],
    ['accel', 'accel', 0],
    ['decel', 'decel', 0],
    ['emergencyDecel', 'emergencyDecel', 0],
    ['maxSpeed', 'maxSpeed', 0],
    ['tau', 'tau', 0],
  ] as const;
  for (const [key, attribute, above] of numeric) {
    const value = source.number(element, attribute, undefined);
    if (value === undefined) continue;
    // minGap may be 0; everything else must be positive for a vehicle to move and stop.
    if (!(value > above) || (key === 'minGap' && value < 0))
      throw source.error(
        element,
        attribute,
        `impossible value ${describeValue(element.attrs[attribute])}: expected a number ${key === 'minGap' ? '>= 0' : '> 0'}`,
      );
    type[key] = value;
  }
  type.emergencyDecel = Math.max(type.emergencyDecel, type.decel);
  const factor = speedFactor(source, element);
  if (factor) {
    if (!(factor.mean > 0) || factor.max < factor.min)
      throw source.error(
        element,
        'speedFactor',
        `impossible value ${describeValue(element.attrs.speedFactor)}`,
      );
    type.speedFactor = factor;
  }
  return type;
}

/**
 * The types SUMO defines before reading any file, by id, with the class each has (their sizes are the
 * class defaults above, as SUMO 1.15's TraCI reports them): a vehicle, person or container whose type
 * no file defines has one of these.
 */
export const SUMO_BUILT_IN_TYPES: Readonly<Record<string, string>> = {
  DEFAULT_VEHTYPE: 'passenger',
  DEFAULT_PEDTYPE: 'pedestrian',
  DEFAULT_BIKETYPE: 'bicycle',
  DEFAULT_TAXITYPE: 'taxi',
  DEFAULT_CONTAINERTYPE: 'ignoring',
};

/** What route and additional files say of types: each type, and the type each vehicle, person or flow has. */
export interface SumoTypes {
  /** By type id: the files' `<vType>`s, then SUMO's built-in types the files do not redefine. */
  types: Map<string, VehicleType>;
  /** By vehicle, person or container id (a flow's by its id: its vehicles are `flowId.n`). */
  typeOf: Map<string, string>;
  flowTypeOf: Map<string, string>;
}

/** Elements that name a type for what they make: vehicles, persons, containers and their flows. */
const TYPED = new Set(['vehicle', 'trip', 'person', 'container']);
const TYPED_FLOWS = new Set(['flow', 'personFlow', 'containerFlow']);

/**
 * Reads the vehicle types of SUMO route or additional files (`<vType>`, also inside
 * `<vTypeDistribution>`), and which type each vehicle, person, container and flow has, for readers of
 * SUMO's outputs that need sizes (the FCD importer, whose positions are front bumpers).
 */
export async function readSumoTypeFiles(paths: readonly string[]): Promise<SumoTypes> {
  const types = new Map<string, VehicleType>();
  const typeOf = new Map<string, string>();
  const flowTypeOf = new Map<string, string>();
  for (const file of paths) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new SimrecError('not_found', `${file}: no such route file`);
      throw new SimrecError('io', `${file}: cannot read: ${(error as Error).message}`, { cause: error });
    }
    if (/<!DOCTYPE[^>[]*\[|<!ENTITY/i.test(text))
      throw invalid(`${file}: refused: the document declares entities; route files need no DTD`);
    const source = new XmlSource(text, { file });
    const root = source.parseRoot(['routes', 'additional']);
    for (const element of root.children) {
      const typeElements =
        element.tag === 'vType'
          ? [element]
          : element.tag === 'vTypeDistribution'
            ? childrenNamed(element, 'vType')
            : [];
      for (const t of typeElements) types.set(source.required(t, 'id'), readVehicleType(source, t));
      const type = element.attrs.type;
      const id = element.attrs.id;
      if (type === undefined || id === undefined) continue;
      if (TYPED.has(element.tag)) typeOf.set(id, type);
      else if (TYPED_FLOWS.has(element.tag)) flowTypeOf.set(id, type);
    }
  }
  for (const [id, vClass] of Object.entries(SUMO_BUILT_IN_TYPES))
    if (!types.has(id)) types.set(id, defaultVehicleType(id, vClass));
  return { types, typeOf, flowTypeOf };
}
