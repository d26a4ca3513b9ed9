/**
 * OSI's own trace files (.osi: each message prefixed by its length, 4 bytes little-endian), both ways:
 * a real SensorView trace (asam-osi-converter's disappearingVehicle, its messages as osi3test wrote
 * them) read as its MCAP form is, and simrec's export read back as its MCAP --osi export is.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { recordDemoRun } from '../src/demo/demo-run.js';
import { GroundTruthType } from '../src/formats/common/osi3/osi3-schema.js';
import { parseTraceName } from '../src/formats/osi/osi-trace-file.js';
import type { StoreBackend } from '../src/model/store-port.js';
import type { Sample } from '../src/model/stream.js';
import { importRecording } from '../src/record/import-run.js';
import { exportRecording } from '../src/replay/export-run.js';
import { streamSamples } from '../src/replay/run-queries.js';
import { openStore } from '../src/store/open-store.js';
import { disappearingVehicleTrace, lengthPrefixed } from './helpers/osi-trace.js';
import { tempDir } from './helpers/paths.js';

const dir = tempDir('simrec-osi-files-');
let store: StoreBackend;
before(async () => {
  store = await openStore(join(dir.path, 'osi.db'));
});
after(async () => {
  await store.close();
  dir.cleanup();
});

async function statesOf(run: number): Promise<Map<string, Sample[]>> {
  const out = new Map<string, Sample[]>();
  const withState = new Set(
    (await store.listStreams(run)).filter((s) => s.name === 'state').map((s) => s.actor),
  );
  for (const a of await store.listActors(run)) {
    if (!withState.has(a.id)) continue;
    const list: Sample[] = [];
    for await (const b of streamSamples(store, run, `${a.id}/state`)) list.push(...b);
    out.set(`${a.id} ${a.kind}`, list);
  }
  return out;
}

describe('.osi trace files', () => {
  it("a real SensorView trace (disappearingVehicle's messages) reads as its MCAP does: every object, where, and when it leaves", async () => {
    const { mcap, messages } = await disappearingVehicleTrace();
    // Named by OSI's convention: what the file holds is read from its name.
    const file = join(dir.path, `20240603T143803Z_sv_3.7.0_3.17.3_${messages.length}_disappearing.osi`);
    writeFileSync(file, lengthPrefixed(messages));
    assert.equal(parseTraceName(file)?.type, 'sv');
    const fromOsi = (await importRecording(store, 'osi', file)).runs[0]!;
    const fromMcap = (await importRecording(store, 'mcap', mcap)).runs[0]!;
    const [a, b] = [await statesOf(fromOsi.id), await statesOf(fromMcap.id)];
    assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort());
    // .osi has no zero_time: its times are the trace's own, the MCAP's from its zero_time.
    const shift = fromMcap.begin - fromOsi.begin;
    for (const [actor, states] of a) {
      const other = b.get(actor)!;
      assert.equal(states.length, other.length, actor);
      for (const [i, s] of states.entries()) {
        assert.equal(s.t + shift, other[i]!.t);
        assert.deepEqual([s.x, s.y, s.z, s.yaw], [other[i]!.x, other[i]!.y, other[i]!.z, other[i]!.yaw]);
      }
    }
    const left = (await store.listActors(fromOsi.id)).find((x) => x.id === 'osi-2')!;
    assert.notEqual(left.presence!.at(-1)!.to, null, 'the vanishing vehicle leaves');
  });

  it("simrec's export: a GroundTruth per frame, every moving object read back where the run has it", async () => {
    const run = (await recordDemoRun(store, { duration: 6, vehicles: 5, seed: 3 })).run.id;
    const osi = join(dir.path, 'demo.osi');
    const details = await exportRecording(store, 'osi', [run], osi);
    assert.match(String(details.conventionalName), /^\d{8}T\d{6}Z_gt_3\.8\.0_[\d.]+_\d+_run-\d+\.osi$/);
    const bytes = readFileSync(osi);
    let count = 0;
    for (let at = 0; at < bytes.length; count++) at += 4 + bytes.readUInt32LE(at);
    assert.equal(count, details.frames, 'one length-prefixed message per frame, nothing else');
    const back = (await importRecording(store, 'osi', osi)).runs[0]!;
    // Every moving object of every frame where the run has it (simrec ids travel as source references).
    let compared = 0;
    const original = await statesOf(run);
    const read = await statesOf(back.id);
    for (const [actor, states] of read) {
      if (actor.endsWith('traffic_light')) continue;
      const before = original.get(actor);
      assert.ok(before, `${actor} is the run's`);
      const at = new Map(before.map((s) => [s.t, s]));
      for (const s of states) {
        const o = at.get(s.t)!;
        assert.ok(o, `${actor} at ${s.t}`);
        assert.ok(Math.abs((s.x as number) - (o.x as number)) < 1e-9, `${actor} x`);
        assert.ok(Math.abs((s.y as number) - (o.y as number)) < 1e-9, `${actor} y`);
        compared++;
      }
    }
    assert.ok(compared > 100, `${compared} object-states compared`);
  });

  it('a long trace is appended in batches, not a commit a message; an object that leaves and comes back keeps its gap', async () => {
    // 400 messages of three objects, the second absent from messages 150 to 249.
    const messages = Array.from({ length: 400 }, (_, k) =>
      GroundTruthType.encode(
        GroundTruthType.fromObject({
          timestamp: { seconds: Math.floor(k / 10), nanos: (k % 10) * 100_000_000 },
          moving_object: [1, 2, 3]
            .filter((n) => n !== 2 || k < 150 || k >= 250)
            .map((n) => ({
              id: { value: n },
              base: {
                dimension: { length: 4, width: 2, height: 1.5 },
                position: { x: k, y: n * 4, z: 0.75 },
              },
            })),
        }),
      ).finish(),
    );
    const file = join(dir.path, 'batched_gt.osi');
    writeFileSync(file, lengthPrefixed(messages));
    // The store's durable writes counted on the way through (the store itself is the real one).
    let commits = 0;
    const counting = new Proxy(store, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver);
        if (name !== 'appendColumns' || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          commits++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const run = (await importRecording(counting, 'osi', file)).runs[0]!.id;
    assert.ok(commits > 0 && commits <= 4, `${commits} durable writes for 400 messages`);
    const states = await statesOf(run);
    const second = [...states].find(([key]) => key.startsWith('osi-2 '))![1];
    assert.deepEqual(
      second.map((s) => s.x),
      Array.from({ length: 400 }, (_, k) => k).filter((k) => k < 150 || k >= 250),
    );
    for (const [key, list] of states) if (!key.startsWith('osi-2 ')) assert.equal(list.length, 400, key);
    const actor = (await store.listActors(run)).find((a) => a.id === 'osi-2')!;
    assert.deepEqual(actor.presence, [
      { from: 0, to: 15_000_000 },
      { from: 25_000_000, to: null },
    ]);
  });

  it('a file cut short is refused by name and byte, and nothing is imported', async () => {
    const file = join(dir.path, 'cut.osi');
    const whole = lengthPrefixed([new Uint8Array([0x12, 0x00]), new Uint8Array(40)]);
    writeFileSync(file, whole.subarray(0, whole.length - 10));
    const runs = (await store.listRuns()).length;
    await assert.rejects(
      importRecording(store, 'osi', file),
      /cut\.osi: message 1 at byte 6: its length says 40 bytes, 30 are left: the file is cut short/,
    );
    assert.equal((await store.listRuns()).length, runs);
  });
});
