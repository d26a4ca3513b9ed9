/**
 * A stream's changes (streamSamples with ChangedRows, the server's `/samples?changes=1`) are judged on the
 * columns, before any sample is built: they must be the samples that a comparison of whole samples
 * keeps, over every field type, absent values, -0, and rows on both sides of a batch's end. Checked on a
 * real SQLite store against that comparison made on the samples read back.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { Random } from '../src/demo/random.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { FieldDecl, Sample } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { streamSamples } from '../src/replay/run-queries.js';
import { ChangedRows } from '../src/replay/sample-changes.js';
import { openStore } from '../src/store/open-store.js';
import { tempDir } from './helpers/paths.js';

const FIELDS: FieldDecl[] = [
  { name: 'x', type: 'f64' },
  { name: 'k', type: 'f32', optional: true },
  { name: 'n', type: 'i32', optional: true },
  { name: 'on', type: 'bool', optional: true },
  { name: 'v', type: 'vec', length: 3, optional: true },
  { name: 'lane', type: 'string', optional: true },
  { name: 'doc', type: 'json', optional: true },
];
const ROWS = 30_000;

/** Values a field takes: few of them, so that a change is often back to a value seen before. */
function valueOf(field: FieldDecl, random: Random): unknown {
  switch (field.type) {
    case 'f64':
      return random.pick([0, -0, 1.5, -2.25, 1e300]);
    case 'f32':
      return Math.fround(random.pick([0.1, 0.2, -0]));
    case 'i32':
      return random.pick([0, 1, -7]);
    case 'bool':
      return random.pick([true, false]);
    case 'vec':
      return random.pick([
        [1, 2, 3],
        [1, 2, 4],
        [0, 0, 0],
        [-0, 0, 0],
      ]);
    case 'string':
      return random.pick(['a', 'b', '']);
    default:
      return random.pick([{ p: [1, 2] }, { p: [1, 3] }, null, 'text', [{ q: 1 }]]);
  }
}

/** Runs of repeated rows broken by a field set, changed or left out. */
function samplesOf(random: Random): Sample[] {
  const samples: Sample[] = [];
  let fields: Record<string, unknown> = { x: 0 };
  for (let i = 0; i < ROWS; i++) {
    if (random.next() < 0.3) {
      const field = random.pick(FIELDS);
      fields = { ...fields };
      if (field.optional && random.next() < 0.3) delete fields[field.name];
      else fields[field.name] = valueOf(field, random);
    }
    samples.push({ t: i * 10_000, step: i, ...fields });
  }
  return samples;
}

/** What the comparison of whole samples keeps: the first, and each whose fields differ from its predecessor's. */
function changesOf(samples: Sample[]): Sample[] {
  const fieldsOf = ({ t: _t, step: _step, ...rest }: Sample) => rest;
  return samples.filter((s, i) => i === 0 || !isDeepStrictEqual(fieldsOf(s), fieldsOf(samples[i - 1]!)));
}

const project = (s: Sample, names: readonly string[]): Sample =>
  Object.fromEntries(
    Object.entries(s).filter(([k]) => k === 't' || k === 'step' || names.includes(k)),
  ) as Sample;

async function collect(batches: AsyncIterable<Sample[]>): Promise<{ samples: Sample[]; batches: number }> {
  const samples: Sample[] = [];
  let count = 0;
  for await (const batch of batches) {
    samples.push(...batch);
    count++;
  }
  return { samples, batches: count };
}

describe("a stream's changes, judged on its columns", () => {
  const dir = tempDir('simrec-changes-');
  let store: StoreBackend;
  const runs = new Map<number, number>();
  before(async () => {
    store = await openStore(join(dir.path, 'changes.db'));
    for (const seed of [1, 2, 3]) {
      const rec = await RunRecorder.begin(store, {});
      await rec.declareActor({ id: 'a', kind: 'vehicle' });
      await rec.declareStream({ name: 'mix', actor: 'a', fields: FIELDS });
      for (const sample of samplesOf(new Random(seed))) await rec.append('a/mix', sample);
      await rec.end();
      runs.set(seed, rec.id);
    }
  });
  after(async () => {
    await store.close();
    dir.cleanup();
  });

  it('keeps the samples a comparison of whole samples keeps, across batches (3 seeds)', async () => {
    for (const [seed, run] of runs) {
      const all = await collect(streamSamples(store, run, 'a/mix'));
      assert.equal(all.samples.length, ROWS);
      assert.ok(all.batches > 1, `seed ${seed}: the stream is read in more than one batch`);
      const changes = await collect(streamSamples(store, run, 'a/mix', { rows: new ChangedRows() }));
      const expected = changesOf(all.samples);
      assert.ok(expected.length > 1000 && expected.length < ROWS / 2, `seed ${seed}: ${expected.length}`);
      assert.deepStrictEqual(changes.samples, expected, `seed ${seed}`);
    }
  });

  it('judges only the fields asked for, and within a window', async () => {
    const run = runs.get(1)!;
    const all = (await collect(streamSamples(store, run, 'a/mix'))).samples;
    for (const names of [['v'], ['lane', 'doc'], ['x'], ['on', 'k', 'n']]) {
      const changes = await collect(
        streamSamples(store, run, 'a/mix', { fields: names, rows: new ChangedRows() }),
      );
      assert.deepStrictEqual(changes.samples, changesOf(all.map((s) => project(s, names))), names.join(','));
    }
    const from = 12_345 * 10_000;
    const to = 23_456 * 10_000;
    const windowed = await collect(streamSamples(store, run, 'a/mix', { from, to, rows: new ChangedRows() }));
    assert.deepStrictEqual(windowed.samples, changesOf(all.filter((s) => s.t >= from && s.t <= to)));
  });
});
