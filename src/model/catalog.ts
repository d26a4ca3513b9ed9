import { describeValue, invalid } from './errors.js';
import { checkJsonValue, type JsonObject } from './json.js';

/**
 * A scenario as SODA.Sim keeps it: an int64 id (bigint here, because int64 does not fit a JS number),
 * a time stamp in microseconds, a description and the scenario's binary.
 */
export interface Scenario {
  id: bigint;
  timestamp: number;
  description: string;
  bin: Uint8Array;
}

export type ScenarioSummary = Omit<Scenario, 'bin'> & { size: number };

/** A vehicle configuration: a unique name, a time stamp (microseconds) and a JSON document. */
export interface VehicleConfig {
  name: string;
  timestamp: number;
  doc: JsonObject;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export function parseScenarioId(value: unknown, where = 'scenario id'): bigint {
  let id: bigint;
  if (typeof value === 'bigint') id = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) id = BigInt(value);
  else if (typeof value === 'string' && /^-?\d{1,20}$/.test(value)) id = BigInt(value);
  else throw invalid(`${where}: expected a 64-bit integer, got ${describeValue(value)}`);
  if (id < INT64_MIN || id > INT64_MAX) throw invalid(`${where}: ${id} does not fit in 64 bits`);
  return id;
}

export function validateScenario(s: Scenario): Scenario {
  const id = parseScenarioId(s.id);
  if (!Number.isSafeInteger(s.timestamp))
    throw invalid(
      `scenario ${id}.timestamp: expected integer microseconds, got ${describeValue(s.timestamp)}`,
    );
  if (typeof s.description !== 'string')
    throw invalid(`scenario ${id}.description: expected a string, got ${describeValue(s.description)}`);
  if (!(s.bin instanceof Uint8Array))
    throw invalid(`scenario ${id}.bin: expected bytes, got ${describeValue(s.bin)}`);
  return { id, timestamp: s.timestamp, description: s.description, bin: s.bin };
}

export function validateVehicleConfig(v: VehicleConfig): VehicleConfig {
  if (typeof v.name !== 'string' || v.name === '')
    throw invalid(`vehicle.name: expected a non-empty string, got ${describeValue(v.name)}`);
  if (!Number.isSafeInteger(v.timestamp))
    throw invalid(
      `vehicle ${v.name}.timestamp: expected integer microseconds, got ${describeValue(v.timestamp)}`,
    );
  if (typeof v.doc !== 'object' || v.doc === null || Array.isArray(v.doc))
    throw invalid(`vehicle ${v.name}.doc: expected a JSON object, got ${describeValue(v.doc)}`);
  checkJsonValue(v.doc, `vehicle ${v.name}.doc`);
  return { name: v.name, timestamp: v.timestamp, doc: v.doc };
}
