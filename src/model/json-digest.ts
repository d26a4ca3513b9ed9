import { createHash } from 'node:crypto';

/**
 * A short token of a value's JSON (22 characters of its SHA-256): equal values, equal tokens. What
 * the stores' run versions and the tables' sources are. Apart from json.ts, which the viewer's
 * bundle reads: this one is Node's.
 */
export function jsonDigest(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('base64url').slice(0, 22);
}
