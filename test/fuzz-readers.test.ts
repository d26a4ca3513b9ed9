/**
 * Fuzzing every reader with mutated and truncated real inputs (seeded, so a failure reproduces):
 * each input either reads or is refused with simrec's own error naming what was wrong. None may
 * crash with another kind of error, hang, or leave a partial run behind.
 */
import assert from 'node:assert/strict';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { SimrecError } from '../src/model/errors.js';
import { STATE_FIELDS } from '../src/model/standard-streams.js';
import { importPerception } from '../src/formats/perception/index.js';
import { exportSoda, importSoda, SodaFolder } from '../src/formats/soda/index.js';
import { recordSyntheticRun } from '../src/demo/synthetic-run.js';
import { decodeMessage, FrameDecoder } from '../src/ingest/framing.js';
import { parseClientMessage, ProtocolError } from '../src/ingest/protocol.js';
import { readRoadNetwork } from '../src/roadnet/read-roadnet.js';
import { crc32 } from 'node:zlib';
import { samplesToColumns } from '../src/model/columns.js';
import { openChunk } from '../src/store/common/chunk-reader.js';
import { assembleChunk, decodeEncodedBlock, encodeBlock } from '../src/store/common/chunk-format.js';
import type { ColumnBatch } from '../src/model/columns.js';
import { openStore } from '../src/store/open-store.js';
import { fixture, tempDir } from './helpers/paths.js';

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

  it('the ingest protocol: 3,000 streams of damaged frames are cut, parsed or refused', () => {
    const good = Buffer.concat([
      Buffer.from([0, 0, 0, 0]),
      Buffer.from(JSON.stringify({ type: 'hello', version: 1, simulator: { name: 'fuzz' } })),
    ]);
    good.writeUInt32BE(good.length - 4, 0);
    const frame = Buffer.concat([Buffer.alloc(4), good]);
    frame.writeUInt32BE(good.length, 0);
    fc.assert(
      fc.property(
        fc.array(mutation(frame.length), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 40 }),
        (mutations, split) =>
          survives(() => {
            const bytes = Buffer.from(mutate(Buffer.concat([frame, frame]), mutations));
            const decoder = new FrameDecoder(1024);
            for (let i = 0; i < bytes.length; i += split)
              for (const message of decoder.push(bytes.subarray(i, i + split))) {
                const { header, body } = decodeMessage(message);
                parseClientMessage(header, body);
              }
          }, [ProtocolError, SimrecError]),
      ),
      { seed: SEED, numRuns: 3000 },
    );
  });

  it('SODA.Sim mongoexport files: 150 damaged dataset files are imported or refused, never half-imported', async () => {
    const store = await openStore(join(dir.path, 'soda.db'));
    const demo = await recordSyntheticRun(store, { duration: 3 });
    const source = join(dir.path, 'soda-source');
    await exportSoda(store, demo.id, await SodaFolder.openForWrite(source), {});
    const batches = readdirSync(source).find((f) => /^dataset\d+\.json$/.test(f))!;
    const original = readFileSync(join(source, batches));
    let refused = 0;
    let imported = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(mutation(original.length), { minLength: 1, maxLength: 3 }),
        async (mutations) => {
          const copy = join(dir.path, 'soda-copy');
          rmSync(copy, { recursive: true, force: true });
          cpSync(source, copy, { recursive: true });
          writeFileSync(join(copy, batches), mutate(original, mutations));
          const before = (await store.listRuns()).length;
          try {
            await importSoda(store, await SodaFolder.openForRead(copy));
            imported++;
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
