import { sampleAt } from '../../model/columns.js';
import { notFound } from '../../model/errors.js';
import type { ReadSamplesArgs, SampleBracket, StoreBackend } from '../../model/store-port.js';
import type { FieldDecl, Sample } from '../../model/stream.js';

/**
 * The sample-object reads every backend offers, on top of its columnar ones: one implementation, so
 * that a backend implements reading once (readColumns, bracketMany) and objects are built the same way.
 */
export async function* readSamplesViaColumns(
  store: StoreBackend,
  args: ReadSamplesArgs,
): AsyncIterable<Sample[]> {
  const fields = await fieldsOf(store, args.run, args.stream);
  for await (const batch of store.readColumns(args)) {
    const out = new Array<Sample>(batch.t.length);
    for (let i = 0; i < batch.t.length; i++) out[i] = sampleAt(batch, fields, i);
    yield out;
  }
}

export async function sampleBracketViaMany(
  store: StoreBackend,
  run: number,
  stream: string,
  t: number,
): Promise<SampleBracket> {
  return (await store.bracketMany(run, { streams: [stream], t }))[0]!;
}

/** A stream's declared fields, then its undeclared ones with the type seen. */
export async function fieldsOf(store: StoreBackend, run: number, stream: string): Promise<FieldDecl[]> {
  const info = (await store.listStreams(run)).find((s) => s.id === stream);
  if (!info) {
    if (!(await store.getRun(run))) throw notFound(`run ${run} does not exist in ${store.location}`);
    throw notFound(`run ${run} has no stream ${JSON.stringify(stream)}`);
  }
  return [...info.fields, ...info.extraFields];
}
