import { STATE_FIELDS } from '../../model/standard-streams.js';
import type { FieldDecl, FieldType } from '../../model/stream.js';

/*
 * SUMO's FCD attributes (MSFCDExport in SUMO 1.15, `--fcd-output.attributes`) and the state fields
 * they become. Positions, headings, slopes and accelerations go to simrec's own fields, converted at
 * this boundary; every other attribute SUMO knows is a field of its own name, typed and with its unit;
 * an attribute SUMO does not list here (a `--fcd-output.params` parameter, a newer SUMO's) is kept as
 * text, under its own name, so that an export writes back what was read.
 */

/** The elements of a timestep: what moves in SUMO. */
export const FCD_ELEMENTS = ['vehicle', 'person', 'container'] as const;
export type FcdElement = (typeof FCD_ELEMENTS)[number];

/** How an attribute is held: its field, and whether its text is a number. */
export interface FcdAttribute {
  field: string;
  numeric: boolean;
}

/** Attributes converted into simrec's fields (the rest keep their names). */
export const CONVERTED: Readonly<Record<string, string>> = {
  x: 'x',
  y: 'y',
  angle: 'yaw',
  slope: 'pitch',
  acceleration: 'accel',
  pos: 'lanePos',
};

const sumo = (name: string, type: FieldType, unit: string | undefined, description: string): FieldDecl => ({
  name,
  type,
  optional: true,
  ...(unit ? { unit } : {}),
  description,
});

/** SUMO's own attributes beyond simrec's state, under SUMO's names. */
const SUMO_FIELDS: FieldDecl[] = [
  sumo('type', 'string', undefined, "SUMO's vType id"),
  sumo('edge', 'string', undefined, 'edge id (SUMO gives it for persons and containers, or when asked)'),
  sumo('signals', 'i32', undefined, "SUMO's signal bits (blinkers, brake light...)"),
  sumo('accelerationLat', 'f64', 'm/s^2', 'lateral acceleration'),
  sumo('distance', 'f64', 'm', "kilometrage along the route's edges (SUMO's linear referencing)"),
  sumo('odometer', 'f64', 'm', 'distance driven since departure'),
  sumo('posLat', 'f64', 'm', "lateral offset from the lane's centre line"),
  sumo('speedLat', 'f64', 'm/s', 'lateral speed'),
  sumo('leaderID', 'string', undefined, 'the leader within --fcd-output.max-leader-distance'),
  sumo('leaderSpeed', 'f64', 'm/s', "the leader's speed"),
  sumo('leaderGap', 'f64', 'm', 'the gap to the leader'),
  sumo('vehicle', 'string', undefined, 'the vehicle a person or container rides in'),
  sumo('arrivalDelay', 'f64', 's', 'delay against a public transport schedule'),
  sumo('lon', 'f64', 'deg', 'longitude of the front bumper, WGS84 (--fcd-output.geo)'),
  sumo('lat', 'f64', 'deg', 'latitude of the front bumper, WGS84 (--fcd-output.geo)'),
];

/** Every actor's `state` (vehicles, persons and containers alike: one frame holds them all). */
export const FCD_STATE_FIELDS: FieldDecl[] = [...STATE_FIELDS, ...SUMO_FIELDS];

const NUMERIC = new Set(
  FCD_STATE_FIELDS.filter((f) => f.type !== 'string' && f.type !== 'json').map((f) => f.name),
);

/**
 * What an attribute of a timestep's element becomes. `geo`: x and y are longitude and latitude (SUMO
 * writes them there with --fcd-output.geo), kept as `lon` and `lat` beside the cartesian x and y.
 */
export function fcdAttribute(name: string, geo: boolean): FcdAttribute {
  if (geo && (name === 'x' || name === 'y')) return { field: name === 'x' ? 'lon' : 'lat', numeric: true };
  if (name === 'z') return { field: 'z', numeric: true };
  const converted = CONVERTED[name];
  if (converted !== undefined) return { field: converted, numeric: true };
  return { field: name, numeric: NUMERIC.has(name) };
}

/** The attributes written for simrec's own fields, in the order SUMO writes them. */
export const WRITE_ORDER = [
  'x',
  'y',
  'z',
  'angle',
  'type',
  'speed',
  'pos',
  'lane',
  'edge',
  'slope',
  'signals',
  'acceleration',
  'accelerationLat',
  'distance',
  'odometer',
  'posLat',
  'speedLat',
  'leaderID',
  'leaderSpeed',
  'leaderGap',
  'vehicle',
  'arrivalDelay',
] as const;
