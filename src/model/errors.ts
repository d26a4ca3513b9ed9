/**
 * simrec has one error class. Callers branch on `code`, never on the message; the message names the
 * file, field or message, the offending value and what was expected, because that is what a user needs
 * to mend their input.
 */
export const ERROR_CODES = [
  /** The input is malformed: wrong type, NaN, time going backwards, unknown actor... (HTTP 400). */
  'invalid',
  /** A run, actor, stream, scenario or vehicle that does not exist (HTTP 404). */
  'not_found',
  /** The operation contradicts the current state: a closed run, a duplicate declaration (HTTP 409). */
  'conflict',
  /** A store or file simrec cannot read: not a simrec store, a newer schema version (HTTP 422). */
  'unsupported',
  /** An I/O or backend failure while reading or writing (HTTP 500). */
  'io',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class SimrecError extends Error {
  override readonly name = 'SimrecError';
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export const invalid = (message: string): SimrecError => new SimrecError('invalid', message);
export const notFound = (message: string): SimrecError => new SimrecError('not_found', message);
export const conflict = (message: string): SimrecError => new SimrecError('conflict', message);

/** A bounded prefix of a text an error quotes (a key, a path): `max` characters at most, "..." if cut. */
export const clipText = (text: string, max = 60): string =>
  text.length > max ? `${text.slice(0, max - 3)}...` : text;

/** Renders a value for an error message: short, and showing NaN/Infinity/undefined as such. */
export function describeValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value);
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(clipText(value));
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (value instanceof Uint8Array) return `${value.byteLength} bytes`;
  if (typeof value === 'object') return 'an object';
  return typeof value;
}
