/**
 * When two recorded values are the same. A diff that calls NaN a change (openpilot's process replay
 * once did) drowns every real change in noise, so:
 * - NaN equals NaN (and an absent number, which columns hold as NaN, equals an absent one);
 * - without a tolerance, numbers are compared bit for bit: -0 and 0 differ, as any two floats whose
 *   bits differ do (a rerun that should be deterministic is checked exactly);
 * - with a tolerance (0 included), numbers within it are equal, -0 and 0 among them;
 * - strings, booleans and null by identity; arrays and objects member by member, with these rules
 *   for the numbers inside them (a JSON field's NaN on both sides is no change).
 */

const scratch = new Float64Array(2);
const bits = new BigUint64Array(scratch.buffer);

function sameBits(a: number, b: number): boolean {
  scratch[0] = a;
  scratch[1] = b;
  return bits[0] === bits[1];
}

/** Two numbers; `tolerance` undefined: bit for bit, NaN equal to NaN of any payload. */
export function sameNumber(a: number, b: number, tolerance: number | undefined): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (tolerance === undefined) return a === b ? sameBits(a, b) : false;
  if (a === b) return true; // infinities, and -0 against 0
  return Math.abs(a - b) <= tolerance;
}

/** Any two values of a sample's fields (numbers, strings, booleans, null, vectors, JSON). */
export function sameValue(a: unknown, b: unknown, tolerance: number | undefined): boolean {
  if (typeof a === 'number' && typeof b === 'number') return sameNumber(a, b, tolerance);
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    if (a.length !== other.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameValue(a[i], other[i], tolerance)) return false;
    return true;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], tolerance))
      return false;
  }
  return true;
}

/**
 * How far apart two values are, for the largest difference of a field: |a - b| for numbers, the
 * largest component's for vectors of numbers; null where there is no distance (strings, JSON, one
 * side absent or NaN).
 */
export function distance(a: unknown, b: unknown): number | null {
  if (typeof a === 'number' && typeof b === 'number') {
    const d = Math.abs(a - b);
    return Number.isNaN(d) ? null : d;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    let most: number | null = null;
    for (let i = 0; i < a.length; i++) {
      const d = distance(a[i], b[i]);
      if (d === null) return null;
      most = most === null ? d : Math.max(most, d);
    }
    return most;
  }
  return null;
}
