/**
 * Every way a simulator hands samples over stores the same samples. Seeded random runs (a random
 * schema of every field type, optional fields left out at random, edge values, an undeclared field,
 * actors coming and going, time standing still now and then) are recorded through each path:
 * RunRecorder's sample objects, columns and frames in process, and the ingest protocol's binary
 * columns and frames (version 2) and JSON samples (version 1) over a real server: over TCP, each
 * awaited; frames over WebSocket, sent without waiting; and frames over a connection the test cuts now
 * and then with frames unanswered (the client resumes and resends). Each is read back and compared,
 * sample by sample and bit for bit (-0 included, which only JSON cannot carry), with what was
 * generated. The in-process store seals every 200 samples in blocks of 64 so that chunk and block
 * boundaries fall everywhere; the server's store keeps its defaults. APPEND_SEEDS=n runs seeds 1 to n
 * instead of the six below (a deeper search, by hand).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Random } from '../src/demo/random.js';
import { IngestClient } from '../src/ingest/ingest-client.js';
import type { FrameInput } from '../src/model/columns.js';
import type { FieldDecl, Sample, StreamDecl } from '../src/model/stream.js';
import { RunRecorder } from '../src/record/run-recorder.js';
import { SqliteBackend } from '../src/store/sqlite/sqlite-backend.js';
import { readAll, startIngestFixture, type IngestFixture } from './helpers/ingest-helpers.js';
import { tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-append-paths-');
let fx: IngestFixture;
let local: SqliteBackend;
before(async () => {
  fx = await startIngestFixture();
  local = SqliteBackend.open(join(dir.path, 'local.db'), { chunkSamples: 200, blockSamples: 64 });
});
after(async () => {
  await local.close();
  await fx.close();
  dir.cleanup();
});

/** A generated run: its streams' schema, its actors, and at each step the samples of the actors present. */
interface GeneratedRun {
  fields: FieldDecl[];
  actors: string[];
  steps: { t: number; step: number; samples: Map<string, Sample> }[];
}

const STRINGS = ['', 'lane_1', 'é∑😀', 'a "quoted" \\ value', ' ', 'x'.repeat(300)];

function generate(seed: number): GeneratedRun {
  const random = new Random(seed);
  const fields: FieldDecl[] = [{ name: 'x', type: 'f64' }];
  const kinds = ['f64', 'f32', 'i32', 'i64', 'bool', 'vec', 'string', 'json'] as const;
  for (let k = 0, count = 2 + random.int(6); k < count; k++) {
    const type = random.pick(kinds);
    const optional = random.next() < 0.6;
    const name = `${type}${k}`;
    fields.push(
      type === 'vec'
        ? { name, type, length: 1 + random.int(4), optional }
        : { name, type, ...(optional ? { optional } : {}) },
    );
  }
  const float = (): number =>
    random.pick([
      () => random.normal(0, 1e3),
      () => random.normal(0, 1e-3),
      () => -0,
      () => 0,
      () => 5e-324,
      () => -2.2250738585072014e-308,
      () => Number.MAX_VALUE,
      () => -Number.MIN_VALUE,
      () => Math.round(random.normal(0, 100)),
    ])();
  const value = (field: FieldDecl): unknown => {
    switch (field.type) {
      case 'f64':
        return float();
      case 'f32':
        return random.pick([
          () => Math.fround(random.normal(0, 1e3)),
          () => Math.fround(random.normal(0, 1e-3)),
          () => -0,
          () => 1.401298464324817e-45,
          () => 3.4028234663852886e38,
          () => -1.5,
        ])();
      case 'i32':
        return random.pick([0, -1, 2 ** 31 - 1, -(2 ** 31), random.int(1000) - 500]);
      case 'i64':
        return random.pick([0, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 40 + random.int(1000), -random.int(1e9)]);
      case 'bool':
        return random.next() < 0.5;
      case 'vec':
        return Array.from({ length: field.length! }, float);
      case 'string':
        return random.pick(STRINGS);
      default:
        return random.pick<unknown>([
          null,
          random.int(100),
          'text',
          { a: [1, null, 'b'], n: random.normal() },
          [random.int(10), { deep: { er: true } }],
        ]);
    }
  };
  const actors = Array.from({ length: 1 + random.int(5) }, (_, i) => `a${i}`);
  const withExtra = random.next() < 0.5;
  const steps: GeneratedRun['steps'] = [];
  let t = 1_000_000;
  const count = 600 + random.int(2400);
  for (let step = 0; step < count; step++) {
    // Time stands still for a step now and then (allowed: never backwards).
    if (random.next() > 0.05) t += 1 + random.int(100_000);
    const samples = new Map<string, Sample>();
    for (const actor of actors) {
      if (random.next() < 0.25) continue; // not present at this step
      const sample: Sample = { t, step };
      for (const field of fields)
        if (!field.optional || random.next() < 0.7) sample[field.name] = value(field);
      // An undeclared field, in some samples only: kept as its values show it (f64).
      if (withExtra && random.next() < 0.3) sample.extra = float();
      samples.set(actor, sample);
    }
    steps.push({ t, step, samples });
  }
  return { fields, actors, steps };
}

const streamOf = (actor: string): string => `${actor}/s`;
const declarations = (run: GeneratedRun): StreamDecl[] =>
  run.actors.map((actor) => ({ name: 's', actor, fields: run.fields }));

/** What each stream reads back: every sample as generated (null, in a JSON field, is a value). */
function expectedOf(run: GeneratedRun): Map<string, Sample[]> {
  const out = new Map(run.actors.map((a) => [streamOf(a), [] as Sample[]]));
  for (const { samples } of run.steps) for (const [actor, s] of samples) out.get(streamOf(actor))!.push(s);
  return out;
}

/** Rows as columns of the field kinds a batch carries: NaN (vec: NaN each) or undefined marks absent. */
function columnsOf(fields: FieldDecl[], rows: Sample[], withExtra: boolean): Record<string, unknown[]> {
  const columns: Record<string, unknown[]> = {};
  for (const field of fields) {
    const numeric = field.type !== 'string' && field.type !== 'json';
    if (field.type === 'vec')
      columns[field.name] = rows.flatMap(
        (r) => (r[field.name] as number[] | undefined) ?? new Array<number>(field.length!).fill(NaN),
      );
    else columns[field.name] = rows.map((r) => (field.name in r ? r[field.name] : numeric ? NaN : undefined));
  }
  if (withExtra) columns.extra = rows.map((r) => (r.extra as number | undefined) ?? NaN);
  return columns;
}

/** The same run split into batches of a random number of steps (commit points fall anywhere). */
function* batchesOf(run: GeneratedRun, seed: number): Generator<GeneratedRun['steps']> {
  const random = new Random(seed * 31 + 7);
  for (let i = 0; i < run.steps.length;) {
    const n = 1 + random.int(random.next() < 0.5 ? 5 : 300);
    yield run.steps.slice(i, i + n);
    i += n;
  }
}

type Path =
  | 'samples'
  | 'columns'
  | 'frames'
  | 'v2 columns'
  | 'v2 frames'
  | 'v1 json'
  | 'v2 frames, WebSocket'
  | 'v2 frames, connection cut';

/** What the path keeps of a sample: JSON has no -0. */
const asStored = (path: Path, samples: Sample[]): Sample[] =>
  path === 'v1 json' ? (JSON.parse(JSON.stringify(samples)) as Sample[]) : samples;

const hasExtra = (run: GeneratedRun): boolean =>
  run.steps.some(({ samples }) => [...samples.values()].some((s) => 'extra' in s));

/** Records `run` through `path`; returns the store and run id to read it back from. */
async function record(
  run: GeneratedRun,
  path: Path,
  seed: number,
): Promise<{ store: SqliteBackend; id: number }> {
  const extra = hasExtra(run);
  const actorDecls = run.actors.map((id) => ({ id, kind: 'vehicle' as const }));
  const frameOf = (step: GeneratedRun['steps'][number]): FrameInput => {
    const present = [...step.samples.keys()];
    return {
      t: step.t,
      step: step.step,
      actors: present,
      columns: columnsOf(run.fields, [...step.samples.values()], extra),
    };
  };
  const streamBatches = (steps: GeneratedRun['steps']) =>
    run.actors
      .map((actor) => {
        const rows = steps.flatMap(({ samples }) => (samples.has(actor) ? [samples.get(actor)!] : []));
        return { stream: streamOf(actor), rows };
      })
      .filter((b) => b.rows.length > 0);

  if (path === 'samples' || path === 'columns' || path === 'frames') {
    const rec = await RunRecorder.begin(local, { begin: 0 });
    await rec.declareActors(actorDecls);
    await rec.declareStreams(declarations(run));
    for (const steps of batchesOf(run, seed)) {
      if (path === 'samples')
        await rec.appendMany(streamBatches(steps).map(({ stream, rows }) => ({ stream, samples: rows })));
      else if (path === 'columns')
        for (const { stream, rows } of streamBatches(steps))
          await rec.appendColumns(stream, {
            t: rows.map((r) => r.t),
            step: rows.map((r) => r.step),
            columns: columnsOf(run.fields, rows, extra),
          });
      else
        await Promise.all(
          steps.filter((s) => s.samples.size > 0).map((s) => rec.appendFrame('s', frameOf(s))),
        );
    }
    await rec.end('completed');
    return { store: local, id: rec.id };
  }
  const client = await IngestClient.connect({
    url: path.endsWith('WebSocket') ? fx.wsUrl : fx.tcpUrl,
    simulator: { name: 'append-paths' },
    protocol: path === 'v1 json' ? 1 : 2,
    reconnect: { attempts: 20, delayMs: 5 },
  });
  const id = await client.beginRun();
  await client.declareActors(actorDecls);
  await client.declareStreams(declarations(run));
  const inFlight: Promise<void>[] = [];
  let batch = 0;
  for (const steps of batchesOf(run, seed)) {
    if (path === 'v1 json')
      await client.append(Object.fromEntries(streamBatches(steps).map(({ stream, rows }) => [stream, rows])));
    else if (path === 'v2 columns')
      await client.appendColumns(
        streamBatches(steps).map(({ stream, rows }) => ({
          stream,
          t: rows.map((r) => r.t),
          step: rows.map((r) => r.step),
          columns: columnsOf(run.fields, rows, extra),
        })),
      );
    else if (path === 'v2 frames, WebSocket')
      for (const s of steps) {
        if (s.samples.size > 0) inFlight.push(client.appendFrame('s', frameOf(s)));
      }
    else if (path === 'v2 frames, connection cut') {
      // Sent without waiting, and the connection dropped now and then with frames unanswered: the
      // client reconnects, resumes its session and resends what the server did not have.
      for (const s of steps) if (s.samples.size > 0) inFlight.push(client.appendFrame('s', frameOf(s)));
      if (++batch % 7 === 3 && batch < 30) client.disconnect();
    } else for (const s of steps) if (s.samples.size > 0) await client.appendFrame('s', frameOf(s));
  }
  await Promise.all(inFlight);
  if (path === 'v2 frames, connection cut') assert.ok(client.reconnects > 0, 'the connection was cut');
  await client.endRun('completed');
  await client.close();
  return { store: fx.store as SqliteBackend, id };
}

/** The run without its undeclared field: binary batches carry declared fields only (docs/protocol.md). */
function withoutExtra(run: GeneratedRun): GeneratedRun {
  const steps = run.steps.map(({ t, step, samples }) => ({
    t,
    step,
    samples: new Map([...samples].map(([actor, { extra: _extra, ...sample }]) => [actor, sample] as const)),
  }));
  return { ...run, steps };
}

describe('every append path stores the same samples', () => {
  const paths: Path[] = [
    'samples',
    'columns',
    'frames',
    'v2 columns',
    'v2 frames',
    'v1 json',
    'v2 frames, WebSocket',
    'v2 frames, connection cut',
  ];
  for (const seed of process.env.APPEND_SEEDS
    ? Array.from({ length: Number(process.env.APPEND_SEEDS) }, (_, i) => i + 1)
    : [1, 2, 3, 4, 5, 6]) {
    it(`seed ${seed}: ${paths.join(', ')}`, async () => {
      for (const path of paths) await recordAndCompare(generate(seed), path, seed);
    });
  }

  it('twelve runs recorded at once (two seeds, every path), each into a store others write too', async () => {
    await Promise.all(
      [7, 8].flatMap((seed) => paths.map((path) => recordAndCompare(generate(seed), path, seed))),
    );
  });
});

/** Records `generated` through `path` and compares what is read back with it, sample by sample. */
async function recordAndCompare(generated: GeneratedRun, path: Path, seed: number): Promise<void> {
  const run = path.startsWith('v2') ? withoutExtra(generated) : generated;
  const { store, id } = await record(run, path, seed).catch((error: unknown) => {
    throw new Error(`${path}: ${(error as Error).message}`, { cause: error });
  });
  for (const [stream, samples] of expectedOf(run)) {
    const read = await readAll(store, id, stream);
    assert.equal(read.length, samples.length, `seed ${seed}, ${path}, ${stream}: samples`);
    for (let i = 0; i < samples.length; i++)
      assert.deepStrictEqual(
        read[i],
        asStored(path, [samples[i]!])[0],
        `seed ${seed}, ${path}, ${stream}, sample ${i} (fields ${JSON.stringify(run.fields)})`,
      );
  }
}

describe('null in a JSON field', () => {
  it('is its value, required or not, in sample objects as in columns and frames (elsewhere null is absence)', async () => {
    const fields: FieldDecl[] = [
      { name: 'info', type: 'json' },
      { name: 'extra', type: 'json', optional: true },
      { name: 'x', type: 'f64', optional: true },
    ];
    const rec = await RunRecorder.begin(local, { begin: 0 });
    await rec.declareActors([
      { id: 'a', kind: 'vehicle' },
      { id: 'b', kind: 'vehicle' },
    ]);
    await rec.declareStreams(['a', 'b'].map((actor) => ({ name: 'j', actor, fields })));
    await rec.appendMany([{ stream: 'a/j', samples: [{ t: 0, step: 0, info: null, extra: null, x: null }] }]);
    await rec.appendColumns('a/j', { t: [1], step: [1], columns: { info: [null], extra: [null] } });
    await rec.appendFrame('j', {
      t: 2,
      step: 2,
      actors: ['a', 'b'],
      columns: { info: [null, { k: 1 }], x: [NaN, 3] },
    });
    await rec.end('completed');
    assert.deepStrictEqual(await readAll(local, rec.id, 'a/j'), [
      { t: 0, step: 0, info: null, extra: null },
      { t: 1, step: 1, info: null, extra: null },
      { t: 2, step: 2, info: null },
    ]);
    assert.deepStrictEqual(await readAll(local, rec.id, 'b/j'), [{ t: 2, step: 2, info: { k: 1 }, x: 3 }]);
  });
});

describe('bad values', () => {
  const fields: FieldDecl[] = [
    { name: 'x', type: 'f64' },
    { name: 'g', type: 'f32', optional: true },
    { name: 'i', type: 'i32', optional: true },
    { name: 'l', type: 'i64', optional: true },
    { name: 'b', type: 'bool', optional: true },
    { name: 'v', type: 'vec', length: 2, optional: true },
    { name: 's', type: 'string', optional: true },
    { name: 'j', type: 'json', optional: true },
  ];
  /** Each is refused by every path; what the paths refuse differently by design is not here (see below). */
  const BAD: [string, Record<string, unknown>][] = [
    ['infinity in a float', { x: Infinity }],
    ['a string in a float', { x: '1' }],
    ['a boolean in a float', { x: true }],
    ['an f32 beyond float32', { x: 1, g: 1e39 }],
    ['a fraction in an i32', { x: 1, i: 1.5 }],
    ['an i32 out of range', { x: 1, i: 2 ** 31 }],
    ['an i64 beyond 2^53', { x: 1, l: 2 ** 53 }],
    ['2 in a bool', { x: 1, b: 2 }],
    ['a string in a bool', { x: 1, b: 'yes' }],
    ['a vec of the wrong length', { x: 1, v: [1, 2, 3] }],
    ['NaN in a vec after its first component', { x: 1, v: [1, NaN] }],
    ['a number in a string', { x: 1, s: 5 }],
    ['NaN inside JSON', { x: 1, j: { a: NaN } }],
    ['undefined in a JSON array', { x: 1, j: [undefined] }],
    ['infinity as JSON', { x: 1, j: Infinity }],
  ];
  // By design, not here: NaN is absence in a column (a required field's NaN is "required but absent",
  // a sample object's "expected a finite number"), a column's bool may be 0 or 1 (a sample's must be a
  // boolean), and a vec row whose first component is NaN is absent in a column.
  const columnsOf = (values: Record<string, unknown>): Record<string, unknown[]> =>
    Object.fromEntries(Object.entries(values).map(([k, v]) => [k, k === 'v' ? (v as unknown[]) : [v]]));

  for (const path of ['samples', 'columns', 'frames', 'v2 columns', 'v2 frames', 'v1 json'] as Path[])
    it(`are refused by ${path}, each naming its field, and nothing of them is kept`, async () => {
      const remote = path.startsWith('v');
      const client = remote
        ? await IngestClient.connect({
            url: fx.tcpUrl,
            simulator: { name: 'bad-values' },
            protocol: path === 'v1 json' ? 1 : 2,
          })
        : undefined;
      const rec = remote ? undefined : await RunRecorder.begin(local, { begin: 0 });
      const run = client ? await client.beginRun() : rec!.id;
      await (client ?? rec!).declareActors([{ id: 'a', kind: 'vehicle' }]);
      await (client ?? rec!).declareStreams([{ name: 's', actor: 'a', fields }]);
      for (const [what, values] of BAD) {
        const sample = { t: 0, step: 0, ...values } as Sample;
        const frame: FrameInput = {
          t: 0,
          step: 0,
          actors: ['a'],
          columns: columnsOf(values),
        };
        const append = (): Promise<unknown> => {
          if (path === 'samples') return rec!.appendMany([{ stream: 'a/s', samples: [sample] }]);
          if (path === 'columns')
            return rec!.appendColumns('a/s', { t: [0], step: [0], columns: frame.columns });
          if (path === 'frames') return rec!.appendFrame('s', frame);
          if (path === 'v1 json') return client!.append({ 'a/s': [sample] });
          if (path === 'v2 columns')
            return client!.appendColumns([{ stream: 'a/s', t: [0], step: [0], columns: frame.columns }]);
          return client!.appendFrame('s', frame);
        };
        const field = Object.keys(values).at(-1)!;
        await assert.rejects(
          (async () => append())(),
          (error: Error) => new RegExp(`\\b${field}\\b`).test(error.message),
          `${path}: ${what} refused, naming field ${field}`,
        );
      }
      if (client) {
        await client.endRun('completed');
        await client.close();
      } else await rec!.end('completed');
      assert.deepStrictEqual(
        await readAll(remote ? fx.store : local, run, 'a/s'),
        [],
        `${path}: nothing kept`,
      );
    });
});
