import { describeValue, invalid } from '../model/errors.js';

/** Parsers for command arguments; each names the argument and the value when it refuses one. */
export function parseRunId(value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw invalid(`RUN: expected a run id (a positive integer, see simrec ls), got ${describeValue(value)}`);
  return Number(value);
}

export function parseSeconds(name: string, value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds))
    throw invalid(`${name}: expected a number of seconds, got ${describeValue(value)}`);
  return seconds;
}

export function parsePositive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw invalid(`${name}: expected a positive number, got ${describeValue(value)}`);
  return n;
}

/** A niceness to add to a process's scheduling priority: 0 (none) to 19 (the lowest priority). */
export function parseNiceness(name: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 0 || n > 19)
    throw invalid(`${name}: expected a whole number from 0 to 19, got ${describeValue(value)}`);
  return n;
}
