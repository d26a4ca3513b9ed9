/**
 * DI-drive's benchmark dataset as its code writes it (core/data/benchmark_dataset_saver.py), which is
 * not what its documentation says: see docs/formats/didrive.md, "The dataset".
 */

/** Names the code writes, then the names the documentation gives (read, never written). */
export const DATASET_METAINFO = ['metainfo.json', 'dataset_metadata.json'] as const;
export const EPISODE_METAINFO = ['episode_metainfo.json', 'episode_metadata.json'] as const;
export const MEASUREMENTS_LMDB = 'measurements.lmdb';
export const INDEX_FILE = 'index.txt';
export const EPISODE_PATTERN = /^episode_(\d{5,})$/;
/** `<obs name>_%05d.png` beside the LMDB: a camera frame. */
export const FRAME_FILE_PATTERN = /^(.+)_(\d{5,})\.png$/;
/** `<key>_%05d` in the LMDB: a per-frame value. */
export const FRAME_KEY_PATTERN = /^(.+)_(\d{5,})$/;

export const LEN_KEY = 'len';
export const MEASUREMENTS_KEY = 'measurements';
/** DI-drive's collection step (CARLA synchronous mode at 10 Hz). */
export const STEP_MICROS = 100_000;
/** LBC hard-codes this shape for the uint8 `birdview_%05d` values; the LMDB stores no shape. */
export const BIRDVIEW_SHAPE = [320, 320, 7] as const;
export const BIRDVIEW_KEY = 'birdview';

export const frameName = (name: string, frame: number): string => `${name}_${String(frame).padStart(5, '0')}`;
export const episodeName = (episode: number): string => `episode_${String(episode).padStart(5, '0')}`;

/** CARLA's RoadOption, as `[11]` holds it. */
export const ROAD_OPTION = {
  VOID: -1,
  LEFT: 1,
  RIGHT: 2,
  STRAIGHT: 3,
  LANEFOLLOW: 4,
  CHANGELANELEFT: 5,
  CHANGELANERIGHT: 6,
} as const;

/** `[18]` tl_state. */
export const TL_STATE = { RED: 0, YELLOW: 1, GREEN: 2, OFF: 3 } as const;
/** `[19]` tl_dis is capped here, and is this when no light lies ahead. */
export const TL_DISTANCE_CAP = 200;

/**
 * Where each quantity lies in the two measurement vectors. The CICT saver inserts velocity, angular
 * velocity and rotation (pitch, yaw, roll in degrees) after the command, which moves control and the
 * traffic light back by nine.
 */
export interface MeasurementLayout {
  length: 20 | 29;
  tick: number;
  timestamp: number;
  forward: number;
  acceleration: number;
  location: number;
  speed: number;
  command: number;
  velocity?: number;
  angularVelocity?: number;
  rotation?: number;
  control: number;
  realControl: number;
  tlState: number;
  tlDistance: number;
}

const STANDARD: MeasurementLayout = {
  length: 20,
  tick: 0,
  timestamp: 1,
  forward: 2,
  acceleration: 4,
  location: 7,
  speed: 10,
  command: 11,
  control: 12,
  realControl: 15,
  tlState: 18,
  tlDistance: 19,
};

const CICT: MeasurementLayout = {
  ...STANDARD,
  length: 29,
  velocity: 12,
  angularVelocity: 15,
  rotation: 18,
  control: 21,
  realControl: 24,
  tlState: 27,
  tlDistance: 28,
};

export const MEASUREMENT_LAYOUTS: Record<number, MeasurementLayout> = { 20: STANDARD, 29: CICT };
export const layoutName = (layout: MeasurementLayout): string => (layout.length === 29 ? 'cict' : 'standard');

/**
 * `json.dumps(value, sort_keys=True, indent=4)` as Python writes it: ", " and ": " separators with the
 * indent, ASCII only, floats as Python's repr. JSON has one number type, so an integral number is
 * written as a Python int (`1`, not `1.0`); an import keeps the source text for that reason.
 */
export function pythonJsonDumps(value: unknown, indent = ''): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return pythonNumber(value);
  if (typeof value === 'string') return pythonString(value);
  const inner = `${indent}    `;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((v) => inner + pythonJsonDumps(v, inner)).join(',\n')}\n${indent}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length === 0) return '{}';
  return `{\n${entries.map(([k, v]) => `${inner}${pythonString(k)}: ${pythonJsonDumps(v, inner)}`).join(',\n')}\n${indent}}`;
}

function pythonNumber(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
  if (Number.isInteger(n)) return Object.is(n, -0) ? '-0.0' : BigInt(n).toString();
  // Python's repr: the shortest digits that read back, fixed notation for exponents -4..15.
  const [mantissa, exp] = n.toExponential().split('e') as [string, string];
  const e = Number(exp);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';
  if (e < -4 || e >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  if (e < 0) return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, '0');
  const fraction = digits.slice(e + 1);
  return `${sign}${whole}.${fraction || '0'}`;
}

function pythonString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i]!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (c < 0x20 || c > 0x7e) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}
