import { invalid } from '../model/errors.js';
import type { StoreBackend } from '../model/store-port.js';
import { normalizeStream, validateSample, type Sample, type StreamDecl } from '../model/stream.js';

/**
 * Stores a stream computed from a run after the fact (metrics, events), replacing an earlier
 * version. Validated like recorded samples, and written in one atomic step, so a failed or repeated
 * evaluation never leaves half a stream behind. Works on closed runs.
 */
export async function writeDerivedStream(
  store: StoreBackend,
  run: number,
  decl: StreamDecl,
  samples: Sample[],
): Promise<string> {
  const schema = normalizeStream(decl);
  if (schema.actor !== null && !(await store.listActors(run)).some((a) => a.id === schema.actor))
    throw invalid(`stream ${schema.id}: actor ${JSON.stringify(schema.actor)} is not in run ${run}`);
  let previous: number | null = null;
  for (const sample of samples) {
    validateSample(schema, sample, previous);
    previous = sample.t;
  }
  await store.putDerivedStream(run, schema, samples);
  return schema.id;
}
