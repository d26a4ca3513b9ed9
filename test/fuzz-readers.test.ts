/**
 * Fuzzing every reader with mutated and truncated real inputs (seeded, so a failure reproduces):
 * each input either reads or is refused with simrec's own error naming what was wrong. None may
 * crash with another kind of error, hang, or leave a partial run behind.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { SimrecError } from '../src/model/errors.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { STATE_FIELDS } from '../src/model/standard-streams.js';
import { importPerception } from './helpers/formats.js';
import { exportDidrive, importDidrive } from './helpers/formats.js';
import { LMDB_DATA_FILE, LmdbWriter, readLmdb } from '../src/formats/didrive/lmdb-file.js';
import { importLimSim } from './helpers/formats.js';
import { exportLimSim } from './helpers/formats.js';
import { exportSoda, importSoda, SodaFolder } from './helpers/formats.js';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import { decodeMessage, encodeFrame, encodeMessage, FrameDecoder } from '../src/ingest/framing.js';
import { parseClientMessage, ProtocolError } from '../src/ingest/protocol.js';
import { readRoadNetwork } from '../src/roadnet/read-roadnet.js';
import { crc32 } from 'node:zlib';
import { samplesToColumns } from '../src/model/columns.js';
import { openChunk } from '../src/store/common/chunk-reader.js';
import { decodeEncodedBlock } from '../src/store/common/chunk-decoder.js';
import { assembleChunk, encodeBlock } from '../src/store/common/chunk-encoder.js';
import type { ColumnBatch } from '../src/model/columns.js';
import { openStore } from '../src/store/open-store.js';
import { importRecording } from '../src/record/import-run.js';
import { exportRecording } from '../src/replay/export-run.js';
import { fixture, REPO_ROOT, tempDir } from './helpers/paths.js';

const SEED = 20261122;
const dir = tempDir('simrec-fuzz-');
after(() => dir.cleanup());

/** Byte-level damage: flips, overwrites, truncation, insertion, deletion. */
const mutation = (length: number) =>
  fc.oneof(
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat(length) }),
    fc.record({ kind: fc.constant('flip' as const), at: fc.nat(Math.max(0, length - 1)), bit: fc.nat(7) }),
    fc.record({
      kind: fc.constant('overwrite' as const),
      at: fc.nat(length),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
    }),
    fc.record({
      kind: fc.constant('insert' as const),
      at: fc.nat(length),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }),
    }),
    fc.record({
      kind: fc.constant('delete' as const),
      at: fc.nat(length),
      count: fc.integer({ min: 1, max: 64 }),
    }),
  );
type Mutation = ReturnType<typeof mutation> extends fc.Arbitrary<infer M> ? M : never;

function mutate(input: Uint8Array, mutations: Mutation[]): Uint8Array {
  let bytes = Buffer.from(input);
  for (const m of mutations) {
    const at = Math.min(m.at, bytes.length);
    if (m.kind === 'truncate') bytes = bytes.subarray(0, at);
    else if (m.kind === 'flip' && bytes.length) bytes[Math.min(at, bytes.length - 1)]! ^= 1 << m.bit;
    else if (m.kind === 'overwrite')
      bytes = Buffer.concat([
        bytes.subarray(0, at),
        Buffer.from(m.bytes),
        bytes.subarray(at + m.bytes.length),
      ]);
    else if (m.kind === 'insert')
      bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(m.bytes), bytes.subarray(at)]);
    else if (m.kind === 'delete')
      bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + m.count)]);
  }
  return bytes;
}

/** Runs `read`; passes if it returns or throws one of the `allowed` error classes. */
function survives(
  read: () => unknown,
  allowed: (new (...args: never[]) => Error)[] = [SimrecError],
): boolean {
  try {
    read();
    return true;
  } catch (error) {
    if (allowed.some((k) => error instanceof k)) return true;
    throw error;
  }
}

/** Imports, or sees the import refused with a SimrecError that left no run behind. */
async function importedOrRefused(
  store: StoreBackend,
  importIt: () => Promise<unknown>,
): Promise<'imported' | 'refused'> {
  const before = (await store.listRuns()).length;
  try {
    await importIt();
    return 'imported';
  } catch (error) {
    if (!(error instanceof SimrecError)) throw error;
    assert.equal(
      (await store.listRuns()).length,
      before,
      `a refused import left a run behind: ${error.message}`,
    );
    return 'refused';
  }
}

/**
 * 150 damaged copies (seeded): `importDamaged` damages a copy as `damage` says and imports it; each
 * import is checked by importedOrRefused and counted.
 */
async function damagedImports<T>(
  store: StoreBackend,
  damage: fc.Arbitrary<T>,
  importDamaged: (damage: T) => Promise<unknown>,
): Promise<{ imported: number; refused: number }> {
  const counts = { imported: 0, refused: 0 };
  await fc.assert(
    fc.asyncProperty(damage, async (d) => {
      counts[await importedOrRefused(store, () => importDamaged(d))]++;
      return true;
    }),
    { seed: SEED, numRuns: 150 },
  );
  return counts;
}

describe('fuzzing the readers (seeded)', () => {
  it('store chunks: 3,000 damaged blocks and frames (checksums put right) are read or refused as corrupt', () => {
    // Checksums catch every mutation; below them, the parser and the decoders themselves are fuzzed.
    const samples = Array.from({ length: 300 }, (_, i) => ({
      t: i * 10_000 + (i % 7),
      step: i,
      x: i * 0.1,
      y: Math.sin(i),
      yaw: 0.01 * i,
      speed: i % 50 ? 10 : undefined,
      lane: `l${i >> 6}`,
      extra: { k: [i, 'v'] },
      wheels: [{ w: i, s: -i }],
    }));
    const batch = samplesToColumns(samples, STATE_FIELDS);
    const columns = [
      ...STATE_FIELDS.map((f) => ({ name: f.name, type: f.type })),
      { name: 'extra', type: 'json' as const },
      { name: 'wheels', type: 'json' as const },
    ];
    const index = new Map(columns.map((c, i) => [c.name, i] as const));
    const blocks = (['packed', 'raw'] as const).map((packing) =>
      encodeBlock(batch, columns, index, 0, 300, packing),
    );
    const chunk = Buffer.from(
      assembleChunk(columns, [
        encodeBlock(batch, columns, index, 0, 150),
        encodeBlock(batch, columns, index, 150, 300),
      ]),
    );
    const wellFormed = (b: ColumnBatch): void => {
      for (const values of Object.values(b.columns))
        if (values.length % b.t.length !== 0) throw new Error('a column of the wrong length decoded');
    };
    fc.assert(
      fc.property(
        fc.nat(1),
        fc.array(mutation(blocks[0]!.bytes.length), { minLength: 1, maxLength: 4 }),
        (which, mutations) =>
          survives(() => {
            const block = blocks[which]!;
            wellFormed(decodeEncodedBlock({ ...block, bytes: mutate(block.bytes, mutations) }, columns));
          }),
      ),
      { seed: SEED, numRuns: 2000 },
    );
    const frameEnd = 16 + chunk.readUInt32LE(4) + chunk.readUInt32LE(8);
    fc.assert(
      fc.property(fc.array(mutation(frameEnd), { minLength: 1, maxLength: 3 }), (mutations) =>
        survives(() => {
          const damaged = Buffer.from(mutate(chunk, mutations));
          // The frame's checksum put right over what the mutations left (lengths included).
          if (damaged.length >= 16) {
            const end = Math.min(damaged.length, 16 + damaged.readUInt32LE(4) + damaged.readUInt32LE(8));
            damaged.writeUInt32LE(crc32(damaged.subarray(16, end), crc32(damaged.subarray(0, 12))), 12);
          }
          wellFormed(openChunk(damaged, 'fuzz chunk').decodeAll());
        }),
      ),
      { seed: SEED, numRuns: 1000 },
    );
  });

  for (const [name, file] of [
    ['SUMO net', fixture('esmini', 'sumo', 'straight.net.xml')],
    ['OpenDRIVE map', fixture('esmini', 'xodr', 'curves_elevation.xodr')],
  ] as const)
    it(`road networks: 1,000 damaged copies of a real ${name} are read or refused`, () => {
      const text = readFileSync(file);
      fc.assert(
        fc.property(fc.array(mutation(text.length), { minLength: 1, maxLength: 3 }), (mutations) =>
          survives(() =>
            readRoadNetwork(Buffer.from(mutate(text, mutations)).toString('utf8'), { file: 'fuzz.xml' }),
          ),
        ),
        { seed: SEED, numRuns: 1000 },
      );
    });

  it('the ingest protocol: 1,000 sessions of valid messages decode to exactly what was encoded, however cut', () => {
    const json = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer(),
      fc.string({ unit: 'binary' }),
      fc.boolean(),
      fc.constant(null),
    );
    const message = fc.oneof(
      fc.record({ type: fc.constant('begin'), description: fc.string({ unit: 'binary' }) }),
      fc.record({
        type: fc.constant('samples'),
        samples: fc.dictionary(
          fc.string({ minLength: 1 }),
          fc.array(fc.record({ t: fc.maxSafeInteger(), step: fc.integer(), x: json, v: json })),
        ),
      }),
      fc.record({
        type: fc.constant('capture'),
        sensor: fc.string({ minLength: 1 }),
        t: fc.maxSafeInteger(),
        step: fc.integer(),
        mediaType: fc.constantFrom('image/png', 'application/octet-stream'),
        body: fc.uint8Array({ minLength: 1, maxLength: 512 }),
      }),
      fc.record({
        type: fc.constant('attach'),
        name: fc.string({ minLength: 1 }),
        mediaType: fc.constant('text/plain'),
        body: fc.uint8Array({ minLength: 1, maxLength: 512 }),
      }),
      fc.record({ type: fc.constant('end'), reason: fc.constantFrom('user_request', 'inner_error') }),
    );
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 97 }),
        (messages, cut) => {
          const sent = messages.map((m, i) => {
            const { body, ...header } = m as { body?: Uint8Array; type: string };
            return { header: { ...header, seq: i + 1 }, body: body ?? null };
          });
          const stream = Buffer.concat(sent.map((m) => encodeFrame(m.header, m.body ?? undefined)));
          const decoder = new FrameDecoder();
          const got: Buffer[] = [];
          for (let i = 0; i < stream.length; i += cut) got.push(...decoder.push(stream.subarray(i, i + cut)));
          assert.equal(got.length, sent.length);
          assert.equal(decoder.pendingBytes, 0);
          for (const [i, bytes] of got.entries()) {
            const { header, body } = decodeMessage(bytes);
            // What was encoded is the header as JSON carries it (-0 becomes 0), and the body's bytes.
            const encoded = JSON.parse(JSON.stringify(sent[i]!.header));
            assert.deepEqual(header, encoded);
            assert.deepEqual(
              body === null ? null : Buffer.from(body),
              sent[i]!.body && Buffer.from(sent[i]!.body),
            );
            const parsed = parseClientMessage(header, body) as unknown as Record<string, unknown>;
            assert.equal(parsed.type, encoded.type);
            assert.equal(parsed.seq, i + 1);
            if (sent[i]!.body)
              assert.deepEqual(Buffer.from(parsed.data as Uint8Array), Buffer.from(sent[i]!.body));
          }
        },
      ),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it('the ingest protocol: 3,000 damaged sessions (hello to end) are parsed as sent, or refused', () => {
    // A whole valid session, so that every parser is reached (a hello with `version` stopped them all).
    const session: [object, Uint8Array?][] = [
      [{ type: 'hello', protocol: 1, simulator: { name: 'fuzz', version: '1' }, token: 't' }],
      [{ type: 'begin', seq: 1, description: 'd', metadata: { town: 'Town01' }, begin: 1_000_000 }],
      [
        {
          type: 'actors',
          seq: 2,
          actors: [{ id: 'ego', kind: 'ego', extents: { length: 4, width: 2, height: 1.5 } }],
        },
      ],
      [
        {
          type: 'streams',
          seq: 3,
          streams: [{ name: 'state', actor: 'ego', fields: [{ name: 'x', type: 'f64', unit: 'm' }] }],
        },
      ],
      [
        {
          type: 'sensors',
          seq: 4,
          sensors: [{ id: 'cam', modality: 'camera', actor: 'ego', width: 4, height: 2 }],
        },
      ],
      [
        {
          type: 'samples',
          seq: 5,
          samples: {
            'ego/state': [
              { t: 1_000_000, step: 0, x: 0.5 },
              { t: 1_100_000, step: 1, x: -0.25 },
            ],
          },
        },
      ],
      [
        { type: 'capture', seq: 6, sensor: 'cam', t: 1_000_000, step: 0, mediaType: 'image/png' },
        new Uint8Array(40).fill(7),
      ],
      [
        { type: 'attach', seq: 7, name: 'scenario.bin', mediaType: 'application/octet-stream' },
        new Uint8Array([1, 2, 3]),
      ],
      [{ type: 'ping' }],
      [{ type: 'end', seq: 8, reason: 'user_request' }],
    ];
    const messages = session.map(([header, body]) => encodeMessage(header, body));
    const expected = new Map(
      messages.map((bytes) => {
        const { header, body } = decodeMessage(bytes);
        return [bytes.toString('latin1'), parseClientMessage(header, body)];
      }),
    );
    const stream = Buffer.concat(session.map(([header, body]) => encodeFrame(header, body)));
    const parsedTypes = new Map<string, number>();
    fc.assert(
      fc.property(
        fc.array(mutation(stream.length), { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 1, max: 200 }),
        (mutations, cut) =>
          survives(() => {
            const bytes = Buffer.from(mutate(stream, mutations));
            const decoder = new FrameDecoder(64 * 1024);
            for (let i = 0; i < bytes.length; i += cut)
              for (const message of decoder.push(bytes.subarray(i, i + cut))) {
                const { header, body } = decodeMessage(message);
                const parsed = parseClientMessage(header, body);
                parsedTypes.set(parsed.type, (parsedTypes.get(parsed.type) ?? 0) + 1);
                // A message the damage did not touch reads exactly as it was sent.
                const original = expected.get(message.toString('latin1'));
                if (original) assert.deepEqual(parsed, original);
              }
          }, [ProtocolError, SimrecError]),
      ),
      { seed: SEED, numRuns: 3000 },
    );
    for (const type of [
      'hello',
      'begin',
      'actors',
      'streams',
      'sensors',
      'samples',
      'capture',
      'attach',
      'end',
    ])
      assert.ok((parsedTypes.get(type) ?? 0) > 50, `${type} parsed ${parsedTypes.get(type) ?? 0} times`);
  });

  it('DI-drive LMDB files: 2,000 damaged copies (bytes, and page numbers, counts and offsets) are read or refused', () => {
    const source = join(dir.path, 'lmdb-source');
    const writer = new LmdbWriter(source);
    // Enough keys for branch pages, and values large enough for overflow pages.
    for (let i = 0; i < 400; i++)
      writer.add(
        Buffer.from(`measurements_${String(i).padStart(5, '0')}`),
        Buffer.alloc(i % 50 === 0 ? 9000 : 80, i),
      );
    writer.finish();
    const original = readFileSync(join(source, LMDB_DATA_FILE));
    const pages = original.length / 4096;
    // The fields a tree walk trusts: page numbers, node counts and offsets, sizes; small values hit them.
    const structural = fc.record({
      kind: fc.constant('overwrite' as const),
      at: fc.nat(original.length - 1).map((at) => at & ~1),
      bytes: fc.integer({ min: 0, max: pages + 2 }).map((n) => new Uint8Array([n & 0xff, n >> 8])),
    });
    let refused = 0;
    fc.assert(
      fc.property(
        fc.array(fc.oneof(mutation(original.length), structural, structural), { minLength: 1, maxLength: 4 }),
        (mutations) => {
          const copy = join(dir.path, 'lmdb-copy');
          rmSync(copy, { recursive: true, force: true });
          mkdirSync(copy);
          writeFileSync(join(copy, LMDB_DATA_FILE), mutate(original, mutations));
          let entries = 0;
          try {
            for (const _ of readLmdb(copy))
              if (++entries > 400) throw new Error('more entries than the file has');
          } catch (error) {
            if (!(error instanceof SimrecError)) throw error;
            refused++;
          }
          return true;
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
    assert.ok(refused > 1000, `damaged files are refused (${refused} of 2,000)`);
  });

  it('DI-drive datasets: 150 damaged datasets are imported or refused, never half-imported', async () => {
    const store = await openStore(join(dir.path, 'didrive.db'));
    const demo = await recordSyntheticRun(store, { duration: 3 });
    const source = join(dir.path, 'didrive-source');
    await exportDidrive(store, [demo.id], source);
    const files = [
      'metainfo.json',
      'episode_00000/episode_metainfo.json',
      `episode_00000/measurements.lmdb/${LMDB_DATA_FILE}`,
    ];
    const originals = files.map((f) => readFileSync(join(source, f)));
    const { imported, refused } = await damagedImports(
      store,
      fc.tuple(fc.nat(files.length - 1), fc.array(mutation(4096), { minLength: 1, maxLength: 3 })),
      async ([which, mutations]) => {
        const copy = join(dir.path, 'didrive-copy');
        rmSync(copy, { recursive: true, force: true });
        cpSync(source, copy, { recursive: true });
        writeFileSync(join(copy, files[which]!), mutate(originals[which]!, mutations));
        await importDidrive(store, copy);
      },
    );
    assert.ok(refused > 0 && imported > 0, `both outcomes happen (refused ${refused}, imported ${imported})`);
    assert.deepEqual((await store.checkIntegrity()).problems, []);
    await store.close();
  });

  it('LimSim databases: 150 damaged SQLite files are imported or refused, never half-imported', async () => {
    const store = await openStore(join(dir.path, 'limsim-store.db'));
    const demo = await recordSyntheticRun(store, { duration: 3 });
    const source = join(dir.path, 'limsim-source.db');
    await exportLimSim(store, demo.id, source);
    const original = readFileSync(source);
    const { imported, refused } = await damagedImports(
      store,
      fc.array(mutation(original.length), { minLength: 1, maxLength: 3 }),
      async (mutations) => {
        const copy = join(dir.path, 'limsim-copy.db');
        rmSync(copy, { force: true });
        writeFileSync(copy, mutate(original, mutations));
        await importLimSim(store, copy);
      },
    );
    assert.ok(refused > 0 && imported > 0, `both outcomes happen (refused ${refused}, imported ${imported})`);
    assert.deepEqual((await store.checkIntegrity()).problems, []);
    await store.close();
  });

  it('MCAP exports: 150 damaged files (zstd chunks, OSI ground truth) are imported or refused, never half-imported', async () => {
    const store = await openStore(join(dir.path, 'mcap-store.db'));
    const demo = await recordSyntheticRun(store, { duration: 3 });
    const source = join(dir.path, 'source.mcap');
    await exportRecording(store, 'mcap', [demo.id], source, { settings: { osi: true } });
    const original = readFileSync(source);
    const { imported, refused } = await damagedImports(
      store,
      fc.array(mutation(original.length), { minLength: 1, maxLength: 3 }),
      async (mutations) => {
        const copy = join(dir.path, 'copy.mcap');
        writeFileSync(copy, mutate(original, mutations));
        await importRecording(store, 'mcap', copy);
      },
    );
    // MCAP checks itself (CRCs of chunks, attachments and the summary; lengths and offsets in the
    // indexes), so damage is nearly always found: refused, naming the file, and nothing kept.
    assert.ok(refused > 0, `refused ${refused}, imported ${imported}`);
    const before = (await store.listRuns()).length;
    await importRecording(store, 'mcap', source);
    assert.equal((await store.listRuns()).length, before + 1, 'the undamaged file imports');
    assert.deepEqual((await store.checkIntegrity()).problems, []);
    await store.close();
  });

  it("CARLA recordings: 150 damaged copies of a real one's first ten frames are imported or refused, never half-imported", async () => {
    const store = await openStore(join(dir.path, 'carla-store.db'));
    const real = readFileSync(
      join(REPO_ROOT, 'test', 'fixtures', 'scenario_runner', '2020', 'DistanceToLaneCenter.log'),
    );
    // Its header and frames 1 to 10 (the end of frame 10's FrameEnd).
    let end = 2;
    end += 2 + real.readUInt16LE(end) + 8;
    end += 2 + real.readUInt16LE(end);
    for (let frames = 0; frames < 10; end += 5 + real.readUInt32LE(end + 1)) if (real[end] === 1) frames++;
    const original = real.subarray(0, end);
    const { imported, refused } = await damagedImports(
      store,
      fc.array(mutation(original.length), { minLength: 1, maxLength: 3 }),
      async (mutations) => {
        const copy = join(dir.path, 'copy.log');
        writeFileSync(copy, mutate(original, mutations));
        await importRecording(store, 'carla', copy);
      },
    );
    assert.ok(refused > 0 && imported > 0, `both outcomes happen (refused ${refused}, imported ${imported})`);
    assert.deepEqual((await store.checkIntegrity()).problems, []);
    await store.close();
  });

  it('SODA.Sim mongoexport files: 150 damaged dataset files are imported or refused, never half-imported', async () => {
    const store = await openStore(join(dir.path, 'soda.db'));
    const demo = await recordSyntheticRun(store, { duration: 3 });
    const source = join(dir.path, 'soda-source');
    await exportSoda(store, demo.id, await SodaFolder.openForWrite(source), {});
    const batches = readdirSync(source).find((f) => /^dataset\d+\.json$/.test(f))!;
    const original = readFileSync(join(source, batches));
    const { imported, refused } = await damagedImports(
      store,
      fc.array(mutation(original.length), { minLength: 1, maxLength: 3 }),
      async (mutations) => {
        const copy = join(dir.path, 'soda-copy');
        rmSync(copy, { recursive: true, force: true });
        cpSync(source, copy, { recursive: true });
        writeFileSync(join(copy, batches), mutate(original, mutations));
        await importSoda(store, await SodaFolder.openForRead(copy));
      },
    );
    assert.ok(refused > 0, `damaged files are refused (refused ${refused}, imported ${imported})`);
    assert.deepEqual((await store.checkIntegrity()).problems, []);
    await store.close();
  });

  it('Unity Perception: 150 damaged datasets are imported or refused, never half-imported', async () => {
    const source = fixture('perception-simrun', 'datasetinsights', 'Dataset');
    const store = await openStore(join(dir.path, 'perception.db'));
    const captures = readFileSync(join(source, 'captures_000.json'));
    let refused = 0;
    let imported = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(mutation(captures.length), { minLength: 1, maxLength: 3 }),
        async (mutations) => {
          const copy = join(dir.path, 'dataset');
          cpSync(source, copy, { recursive: true });
          writeFileSync(join(copy, 'captures_000.json'), mutate(captures, mutations));
          const before = (await store.listRuns()).length;
          try {
            await importPerception(store, copy);
            imported++;
            assert.equal((await store.listRuns()).length, before + 1);
          } catch (error) {
            if (!(error instanceof SimrecError)) throw error;
            refused++;
            assert.equal(
              (await store.listRuns()).length,
              before,
              `a refused import left a run behind: ${error.message}`,
            );
          }
          return true;
        },
      ),
      { seed: SEED, numRuns: 150 },
    );
    assert.ok(refused > 0 && imported > 0, `both outcomes happen (refused ${refused}, imported ${imported})`);
    assert.deepEqual((await store.checkIntegrity()).problems, []);
    await store.close();
  });
});
