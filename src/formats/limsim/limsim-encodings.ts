import { describeValue, invalid } from '../../model/errors.js';

/**
 * The strings LimSim writes inside its columns. LimSim is Python: numbers in text columns are
 * Python's `repr` of a float (`0.0`, `1e-05`), times are `str(datetime.now())`, lists are joined
 * with spaces (routes, phases) or commas (geohash cells).
 */

/** Python's repr of a float: the shortest round-trip digits, like JavaScript's, but spelled differently. */
export function pythonFloat(n: number): string {
  if (Number.isNaN(n)) return 'nan';
  if (!Number.isFinite(n)) return n > 0 ? 'inf' : '-inf';
  const [mantissa, exponentText] = n.toExponential().split('e') as [string, string];
  const exponent = Number(exponentText);
  // Python switches to exponent notation below 1e-4 and from 1e16; JavaScript at 1e-7 and 1e21.
  if (exponent < -4 || exponent >= 16)
    return `${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  const text = String(n);
  return Number.isInteger(n) ? `${text}.0` : text;
}

/** `simINFO.netBoundary`: an f-string of traci's `getNetBoundary()`, `"x1,y1 x2,y2"`. */
export function formatNetBoundary([x1, y1, x2, y2]: readonly [number, number, number, number]): string {
  return `${pythonFloat(x1)},${pythonFloat(y1)} ${pythonFloat(x2)},${pythonFloat(y2)}`;
}

export function parseNetBoundary(text: string, where: string): [number, number, number, number] {
  const values = text
    .trim()
    .split(/[\s,]+/)
    .map(Number);
  if (values.length !== 4 || !values.every(Number.isFinite))
    throw invalid(`${where}: expected "x1,y1 x2,y2", got ${describeValue(text)}`);
  return values as [number, number, number, number];
}

/** `vehicleINFO.routes`: SUMO edge ids joined with spaces. */
export const parseRoute = (text: string): string[] => text.split(' ').filter((id) => id !== '');
export const formatRoute = (edges: readonly string[]): string => edges.join(' ');

/** `geohashINFO.edges` and `.junctions`: ids joined with commas, in the order of a Python set. */
export const parseIdList = (text: string | null): string[] =>
  text === null ? [] : text.split(',').filter((id) => id !== '');
export const formatIdList = (ids: Iterable<string>): string => [...ids].join(',');

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/;

/**
 * `simINFO.startTime`: Python's `str(datetime.now())`, a naive local time. The zone it was taken in
 * is not recorded, so it is read as UTC: the clock is then wrong by the recorder's offset from UTC,
 * but the text comes back unchanged on export, which is what LimSim and its users see.
 */
export function parseStartTime(text: string, where: string): number {
  const m = TIMESTAMP.exec(text.trim());
  if (!m)
    throw invalid(`${where}: expected a time like "2023-07-13 19:02:37.076876", got ${describeValue(text)}`);
  const [, y, mo, d, h, mi, s, fraction = ''] = m;
  const millis = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (!Number.isFinite(millis)) throw invalid(`${where}: not a valid date: ${describeValue(text)}`);
  return millis * 1000 + Number(fraction.padEnd(6, '0'));
}

/** Python's `str(datetime)`: microseconds only when there are some. */
export function formatStartTime(micros: number): string {
  const date = new Date(Math.floor(micros / 1000));
  const fraction = ((micros % 1_000_000) + 1_000_000) % 1_000_000;
  const base = date.toISOString().slice(0, 19).replace('T', ' ');
  return fraction === 0 ? base : `${base}.${String(fraction).padStart(6, '0')}`;
}

/** SUMO's lane attributes `allow`/`disallow` as LimSim++ stores them: classes joined with spaces. */
export const parseClasses = (text: string): string[] => text.split(' ').filter((c) => c !== '');
