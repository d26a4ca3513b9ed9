import { join } from 'node:path';
import { controlStream, STATE_FIELDS, stateStream, wheelsStream } from '../../src/model/standard-streams.js';
import type { StoreBackend, StreamAppend } from '../../src/model/store-port.js';
import type { Sample } from '../../src/model/stream.js';
import { RunRecorder } from '../../src/record/run-recorder.js';
import { sceneAt, trajectory } from '../../src/replay/run-queries.js';
import { openStore } from '../../src/store/open-store.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { actorId, BEGIN_US, LANE_IDS } from '../generator.js';
import type { Peer, RecordArgs } from '../peer.js';

const STORE_FILE = 'bench.simrec.db';

/** LimSim's routeIdx has no standard field; a simulator declares such extras on its state stream. */
const BENCH_STATE_FIELDS = [...STATE_FIELDS, { name: 'routeIdx', type: 'i32' as const }];

async function record(store: StoreBackend, { frames, commitEverySteps }: RecordArgs): Promise<void> {
  const { actors, steps, hz } = frames.size;
  const rec = await RunRecorder.begin(store, {
    simulator: { name: 'simrec-bench', version: '1' },
    begin: BEGIN_US,
    description: `${actors} actors x ${steps} steps at ${hz} Hz`,
  });
  const ids = Array.from({ length: actors }, (_, i) => actorId(i));
  await rec.declareActors(ids.map((id, i) => ({ id, kind: i === 0 ? 'ego' : 'vehicle' })));
  await rec.declareStreams([
    ...ids.map((id) => stateStream(id, { rateHz: hz, fields: BENCH_STATE_FIELDS })),
    controlStream('ego', { rateHz: hz }),
    wheelsStream('ego', { rateHz: hz }),
  ]);
  const stateIds = ids.map((id) => `${id}/state`);
  for (let s = 0; s < steps; s++) {
    const f = frames.next();
    const appends: StreamAppend[] = new Array(actors + 2);
    for (let i = 0; i < actors; i++) {
      const sample: Sample = {
        t: f.t,
        step: f.step,
        x: f.x[i]!,
        y: f.y[i]!,
        yaw: f.yaw[i]!,
        speed: f.speed[i]!,
        accel: f.accel[i]!,
        lane: LANE_IDS[f.lane[i]!]!,
        lanePos: f.lanePos[i]!,
        routeIdx: f.routeIdx[i]!,
      };
      appends[i] = { stream: stateIds[i]!, samples: [sample] };
    }
    appends[actors] = { stream: 'ego/control', samples: [{ t: f.t, step: f.step, ...f.control }] };
    appends[actors + 1] = {
      stream: 'ego/wheels',
      samples: [{ t: f.t, step: f.step, wheels: f.wheels.map((w) => ({ ...w })) }],
    };
    const durable = rec.appendMany(appends);
    if ((s + 1) % commitEverySteps === 0) await durable;
  }
  await rec.end('completed');
  await store.close();
}

/** simrec as a user opens it: `openStore` with its defaults (synchronous=FULL). */
export const simrecPeer: Peer = {
  name: 'simrec',
  description: 'RunRecorder.appendMany per step into the SQLite store (defaults: durability full)',
  record: async (args) => record(await openStore(join(args.dir, STORE_FILE)), args),
  async open(dir) {
    const store = await openStore(join(dir, STORE_FILE));
    const [run] = await store.listRuns();
    const id = run!.id;
    return {
      scene: async (t) => (await sceneAt(store, id, { t })).actors.length,
      trajectory: async (actor) => (await trajectory(store, id, { actor })).samples.length,
      close: () => store.close(),
    };
  },
  seekable: true,
};

/** Reported apart: it trades durability across a power cut for speed, which the default never does. */
export const simrecNormalPeer: Peer = {
  name: 'simrec-normal',
  description: 'as simrec, with durability: normal (survives a process crash, not a power cut)',
  record: async (args) =>
    record(SqliteBackend.open(join(args.dir, STORE_FILE), { durability: 'normal' }), args),
  readNote: 'same file layout as simrec; read workloads would measure the same thing',
};
