import { readFileSync } from 'node:fs';
import { describeValue, invalid } from '../../model/errors.js';
import type { JsonObject, JsonValue } from '../../model/json.js';
import type { FieldDecl, Sample } from '../../model/stream.js';

/**
 * ScenarioRunner's criteria, as its `--record` run leaves them beside the recording
 * (`NAME_criteria.json`): one object per criterion, keyed by its name, holding the criterion's
 * attributes as Python had them (srunner/scenariomanager/scenarioatomics/atomic_criteria.py):
 * `test_status` (SUCCESS, FAILURE, ACCEPTABLE, RUNNING, INIT), `actual_value`,
 * `expected_value_success`, `expected_value_acceptable`, `optional`, `terminate_on_failure`,
 * `feedback_message`, and each criterion's own (`_accum_meters`, `registered_collisions`...).
 */

export const CRITERIA_ATTACHMENT = 'scenario_runner/criteria.json';

export const CRITERIA_FIELDS: FieldDecl[] = [
  {
    name: 'name',
    type: 'string',
    description: 'the criterion, as ScenarioRunner names it (CollisionTest...)',
  },
  { name: 'status', type: 'string', description: 'test_status: SUCCESS, FAILURE, ACCEPTABLE, RUNNING, INIT' },
  { name: 'actual', type: 'f64', optional: true, description: 'actual_value' },
  { name: 'expected', type: 'f64', optional: true, description: 'expected_value_success' },
  { name: 'acceptable', type: 'f64', optional: true, description: 'expected_value_acceptable' },
  { name: 'optional', type: 'bool', optional: true },
  { name: 'terminateOnFailure', type: 'bool', optional: true, description: 'terminate_on_failure' },
  { name: 'feedback', type: 'string', optional: true, description: 'feedback_message' },
  {
    name: 'details',
    type: 'json',
    optional: true,
    description:
      "the criterion's other attributes as ScenarioRunner wrote them, and a non-numeric actual or expected value",
  },
];

export interface Criteria {
  bytes: Uint8Array;
  criteria: { name: string; fields: JsonObject }[];
  summary: { criteria: number; failed: string[]; status: 'SUCCESS' | 'FAILURE' };
}

const TAKEN = new Set([
  'test_status',
  'actual_value',
  'expected_value_success',
  'expected_value_acceptable',
  'optional',
  'terminate_on_failure',
  '_terminate_on_failure',
  'feedback_message',
]);

export function readCriteriaFile(file: string): Criteria {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw invalid(
      `${file}: ${code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? String(error)})`}; expected ScenarioRunner's criteria (JSON)`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw invalid(`${file}: not JSON (${(error as Error).message}); expected ScenarioRunner's criteria`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw invalid(`${file}: expected an object of criteria by name, got ${describeValue(parsed)}`);
  const criteria: Criteria['criteria'] = [];
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw invalid(
        `${file}: criterion ${JSON.stringify(name)}: expected an object, got ${describeValue(value)}`,
      );
    const c = value as Record<string, JsonValue>;
    const status = c.test_status;
    if (typeof status !== 'string')
      throw invalid(
        `${file}: criterion ${JSON.stringify(name)}.test_status: expected a string, got ${describeValue(status)}`,
      );
    const fields: JsonObject = { name, status };
    const details: JsonObject = {};
    const number = (key: string, field: string): void => {
      const v = c[key];
      if (typeof v === 'number') fields[field] = v;
      else if (v !== null && v !== undefined) details[key] = v;
    };
    number('actual_value', 'actual');
    number('expected_value_success', 'expected');
    number('expected_value_acceptable', 'acceptable');
    if (typeof c.optional === 'boolean') fields.optional = c.optional;
    const terminate = c.terminate_on_failure ?? c._terminate_on_failure;
    if (typeof terminate === 'boolean') fields.terminateOnFailure = terminate;
    if (typeof c.feedback_message === 'string' && c.feedback_message !== '')
      fields.feedback = c.feedback_message;
    for (const [k, v] of Object.entries(c)) if (!TAKEN.has(k)) details[k] = v;
    fields.details = details;
    criteria.push({ name, fields });
  }
  const failed = criteria
    .filter((c) => c.fields.status === 'FAILURE' && c.fields.optional !== true)
    .map((c) => c.name);
  return {
    bytes,
    criteria,
    summary: { criteria: criteria.length, failed, status: failed.length ? 'FAILURE' : 'SUCCESS' },
  };
}

/** One sample per criterion, at the end of the run (ScenarioRunner judges them when the scenario ends). */
export const criteriaSamples = (c: Criteria, t: number): Sample[] =>
  c.criteria.map((criterion, i) => ({ t, step: i, ...criterion.fields }));
