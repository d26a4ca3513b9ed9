/**
 * One conformance suite for every format codec (docs/architecture.md, "Ports"),
 * run on a real SQLite store through the work layer, as `simrec import` and `simrec export` run them:
 *
 * - each fixture reads;
 * - read, write, read gives the same run, within the losses the format documents (docs/formats/README.md:
 *   what a round trip through each format keeps), and a second round trip changes nothing at all;
 * - a read that fails, or is aborted halfway, leaves no run and no catalog entry behind;
 * - a write that is aborted halfway leaves nothing at the location;
 * - every warning names its place.
 *
 * A codec that cannot take a test says which and why in `skip`; the suite prints it by name.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FormatCodec } from '../src/model/codec-port.js';
import type { RunInfo } from '../src/model/run.js';
import type { StoreBackend } from '../src/model/store-port.js';
import { importRecording } from '../src/record/import-run.js';
import { exportRecording } from '../src/replay/export-run.js';
import { openStore } from '../src/store/open-store.js';
import { tempDir } from './helpers/paths.js';

export type ConformanceTest =
  'reads' | 'round trip' | 'failed read' | 'aborted read' | 'aborted write' | 'warnings';

export interface CodecFixture {
  name: string;
  /** Where the recording is; made in `dir` when it must be built (by simrec, from another source). */
  location: (dir: string, store: StoreBackend) => Promise<string> | string;
}

export interface ConformanceOptions {
  codec: FormatCodec;
  fixtures: CodecFixture[];
  /** A location the codec must refuse (damaged, truncated): made in `dir`. */
  broken?: (dir: string) => Promise<string> | string;
  /**
   * What a round trip through the format loses, as a projection of the run's fingerprint: the same
   * function is applied to both sides before they are compared. Documented in docs/formats/README.md.
   */
  losses?: { description: string; project: (print: RunPrint) => RunPrint };
  /**
   * Significant digits a float keeps through the format, when it is not bit-exact (a format that
   * converts to another frame or unit and back): compared to that precision.
   */
  precision?: number;
  /** For export-only formats: a run to write, made in the store. */
  sourceRun?: (store: StoreBackend, dir: string) => Promise<number>;
  skip?: { reason: string; tests: ConformanceTest[] }[];
}

/** A run as the suite compares it: what is there, and a digest of every stream's samples. */
export interface RunPrint {
  actors: string[];
  streams: Record<string, { samples: number; digest: string }>;
}

/** Times relative to the run's begin: a format may not keep the absolute clock. */
export async function runPrint(store: StoreBackend, run: RunInfo, precision?: number): Promise<RunPrint> {
  const round = (v: unknown): unknown =>
    precision !== undefined && typeof v === 'number' && !Number.isInteger(v)
      ? Number(v.toPrecision(precision))
      : v;
  const actors = (await store.listActors(run.id)).map((a) => `${a.id} ${a.kind}`).sort();
  const streams: RunPrint['streams'] = {};
  for (const s of await store.listStreams(run.id)) {
    const hash = createHash('sha256');
    for await (const batch of store.readSamples({ run: run.id, stream: s.id }))
      for (const sample of batch) hash.update(canonical({ ...sample, t: sample.t - run.begin }, round));
    streams[s.id] = { samples: s.samples, digest: hash.digest('hex').slice(0, 16) };
  }
  return { actors, streams };
}

const canonical = (value: unknown, round: (v: unknown) => unknown): string =>
  JSON.stringify(value, (_k, raw: unknown) => {
    const v = round(raw);
    if (typeof v === 'bigint') return `${v}n`;
    if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
    if (v && typeof v === 'object' && !Array.isArray(v))
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)),
      );
    return v;
  });

/** Everything a store holds that a rolled-back import must not have changed. */
async function storeContents(store: StoreBackend): Promise<string> {
  const runs = (await store.listRuns()).map((r) => r.id);
  const scenarios = (await store.scenarios.list()).map((s) => `${s.id}`);
  const vehicles = (await store.vehicles.list()).map((v) => v.name);
  return JSON.stringify({ runs, scenarios, vehicles });
}

const siblingsOf = (location: string): string[] =>
  readdirSync(dirname(location)).filter((n) => n.includes('.partial'));

export function runCodecConformance(options: ConformanceOptions): void {
  const { codec } = options;
  const skipped = new Map<ConformanceTest, string>();
  for (const s of options.skip ?? []) for (const t of s.tests) skipped.set(t, s.reason);
  const test = (name: ConformanceTest, title: string, body: () => Promise<void>): void => {
    const reason = skipped.get(name);
    if (reason) it(`${title} (skipped for ${codec.name}: ${reason})`, { skip: reason }, () => {});
    else it(title, body);
  };

  describe(`codec conformance: ${codec.name}`, () => {
    const tmp = tempDir(`simrec-conformance-${codec.name}-`);
    let store: StoreBackend;
    let count = 0;
    const fresh = (name: string): string => join(tmp.path, `${++count}-${name}`);
    before(async () => {
      store = await openStore(join(tmp.path, 'store.db'));
    });
    after(async () => {
      await store.close();
      tmp.cleanup();
    });

    const read = async (location: string, warnings: { where: string; message: string }[] = []) =>
      importRecording(store, codec, location, {
        warn: (where, message) => warnings.push({ where, message }),
      });

    for (const fixture of options.fixtures) {
      test('reads', `reads ${fixture.name}`, async () => {
        const { runs } = await read(await fixture.location(tmp.path, store));
        assert.ok(runs.length > 0);
        for (const run of runs) assert.equal(run.state, 'closed');
      });

      test(
        'round trip',
        `${fixture.name}: read, write, read gives the same run; again changes nothing`,
        async () => {
          const first = (await read(await fixture.location(tmp.path, store))).runs;
          const out1 = fresh(`${codec.name}-1`);
          await exportRecording(store, codec, codec.multiRun ? first.map((r) => r.id) : [first[0]!.id], out1);
          const second = (await read(out1)).runs;
          const out2 = fresh(`${codec.name}-2`);
          await exportRecording(
            store,
            codec,
            codec.multiRun ? second.map((r) => r.id) : [second[0]!.id],
            out2,
          );
          const third = (await read(out2)).runs;
          const project = options.losses?.project ?? ((p: RunPrint) => p);
          const compared = codec.multiRun ? first.length : 1;
          assert.equal(second.length >= compared, true);
          for (let i = 0; i < compared; i++) {
            const [a, b, c] = await Promise.all(
              [first[i]!, second[i]!, third[i]!].map((r) => runPrint(store, r, options.precision)),
            );
            assert.deepEqual(
              project(b!),
              project(a!),
              `run ${first[i]!.id}: what the format keeps came back`,
            );
            assert.deepEqual(c, b, `run ${second[i]!.id}: a second round trip changes nothing`);
          }
        },
      );
    }

    if (options.broken)
      test('failed read', 'a read that fails leaves no run and no catalog entry', async () => {
        const before = await storeContents(store);
        await assert.rejects(read(await options.broken!(tmp.path)));
        assert.equal(await storeContents(store), before);
      });

    if (options.fixtures.length)
      test(
        'aborted read',
        'a read aborted once its run has begun leaves no run and no catalog entry',
        async () => {
          const location = await options.fixtures[0]!.location(tmp.path, store);
          const before = await storeContents(store);
          const controller = new AbortController();
          // The store is real; only its createRun is watched, to abort as soon as the reader has begun.
          const watched = new Proxy(store, {
            get(target, key, receiver) {
              if (key === 'createRun')
                return async (...args: Parameters<StoreBackend['createRun']>) => {
                  const run = await target.createRun(...args);
                  controller.abort(new Error('aborted by the conformance suite'));
                  return run;
                };
              const value: unknown = Reflect.get(target, key, receiver);
              return typeof value === 'function'
                ? (value as (...a: unknown[]) => unknown).bind(target)
                : value;
            },
          });
          await assert.rejects(
            importRecording(watched, codec, location, { signal: controller.signal }),
            /aborted/,
          );
          assert.equal(await storeContents(store), before);
        },
      );

    if (codec.write && (codec.output === 'file' || codec.output === 'folder'))
      test('aborted write', 'a write aborted halfway leaves nothing at the location', async () => {
        const run = options.sourceRun
          ? await options.sourceRun(store, tmp.path)
          : (await read(await options.fixtures[0]!.location(tmp.path, store))).runs[0]!.id;
        const controller = new AbortController();
        const out = fresh(`${codec.name}-aborted`);
        let reads = 0;
        await assert.rejects(
          exportRecording(store, codec, [run], out, {
            signal: controller.signal,
            onProgress: () => {
              if (++reads === 1) controller.abort(new Error('aborted by the conformance suite'));
            },
            warn: () => {
              if (!controller.signal.aborted) controller.abort(new Error('aborted by the conformance suite'));
            },
          }),
          /aborted by the conformance suite/,
          'the writer reports progress, and stops when aborted',
        );
        assert.ok(!existsSync(out), `${out} must not exist`);
        assert.deepEqual(siblingsOf(out), []);
      });

    if (codec.write && options.sourceRun)
      test('warnings', 'writes a run and every warning names its place', async () => {
        const run = await options.sourceRun!(store, tmp.path);
        const warnings: { where: string; message: string }[] = [];
        const out = fresh(`${codec.name}-out`);
        await exportRecording(store, codec, [run], out, {
          warn: (where, message) => warnings.push({ where, message }),
        });
        assert.ok(existsSync(out));
        for (const w of warnings)
          assert.ok(w.where.trim().length > 0 && w.message.trim().length > 0, JSON.stringify(w));
      });

    if (options.fixtures.length)
      test('warnings', 'every warning of a read names its place', async () => {
        for (const fixture of options.fixtures) {
          const warnings: { where: string; message: string }[] = [];
          await read(await fixture.location(tmp.path, store), warnings);
          for (const w of warnings)
            assert.ok(w.where.trim().length > 0 && w.message.trim().length > 0, JSON.stringify(w));
        }
      });
  });
}
