import { join } from 'node:path';
import { controlStream, STATE_FIELDS, stateStream, wheelsStream } from '../../src/model/standard-streams.js';
import type { StoreBackend } from '../../src/model/store-port.js';
import type { FieldDecl } from '../../src/model/stream.js';
import { RunRecorder } from '../../src/record/run-recorder.js';
import { sceneAt, trajectoryColumns } from '../../src/replay/run-queries.js';
import { openStore } from '../../src/store/open-store.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { actorId, BEGIN_US, LANE_IDS } from '../generator.js';
import type { Peer, RecordArgs } from '../peer.js';

const STORE_FILE = 'bench.simrec.db';
const EGO = ['ego'];

/** LimSim's routeIdx has no standard field; a simulator declares such extras on its state stream. */
const BENCH_STATE_FIELDS: FieldDecl[] = [...STATE_FIELDS, { name: 'routeIdx', type: 'i32' }];
/** The same fields declared float32: a simulator whose floats are single precision says so. */
const F32_STATE_FIELDS: FieldDecl[] = BENCH_STATE_FIELDS.map((f) =>
  f.type === 'f64' ? { ...f, type: 'f32' } : f,
);

/**
 * How the loop waits at a commit point. `pipelined`: the commit is asked for and the loop goes on with
 * the next steps while the writer thread makes it durable; before asking for the next one it waits for
 * this one (so at most one commit point's steps are not yet durable, and an error reaches the loop one
 * commit later). simrec's own recorders (`record sumo`, ingest) do this: a simulator does not stop while
 * a disk syncs. `awaited`: the loop stops at each commit point until it is durable, as a single-threaded
 * writer (the LimSim peer) must.
 */
type CommitWait = 'pipelined' | 'awaited';

/**
 * A simulator's recording loop, as simrec asks to be fed: each step is one frame of every actor's state
 * (typed arrays, one value per actor, `appendFrame`), the ego's control and wheels beside it as frames
 * of one actor (the wheels' objects copied, as a simulator making them anew each step would). The lane
 * ids are the strings a simulator has; converting the generator's indexes to them is billed to simrec.
 */
async function record(
  store: StoreBackend,
  { frames, commitEverySteps }: RecordArgs,
  fields: FieldDecl[],
  wait: CommitWait = 'pipelined',
): Promise<void> {
  const { actors, steps, hz } = frames.size;
  const rec = await RunRecorder.begin(store, {
    simulator: { name: 'simrec-bench', version: '1' },
    begin: BEGIN_US,
    description: `${actors} actors x ${steps} steps at ${hz} Hz`,
  });
  const ids = Array.from({ length: actors }, (_, i) => actorId(i));
  await rec.declareActors(ids.map((id, i) => ({ id, kind: i === 0 ? 'ego' : 'vehicle' })));
  await rec.declareStreams([
    ...ids.map((id) => stateStream(id, { rateHz: hz, fields })),
    controlStream('ego', { rateHz: hz }),
    wheelsStream('ego', { rateHz: hz }),
  ]);
  const lane = new Array<string>(actors);
  // The ego's driver inputs as a frame of one actor, its arrays filled again each step (appendFrame
  // copies them): sample objects held until the commit were most of what survived the appending
  // thread's young collections (its peak 13-15 MiB lower this way, at the same speed).
  const control = {
    throttle: new Float64Array(1),
    brake: new Float64Array(1),
    steer: new Float64Array(1),
    gear: new Float64Array(1),
  };
  let committing: Promise<void> = Promise.resolve();
  for (let s = 0; s < steps; s++) {
    const f = frames.next();
    for (let i = 0; i < actors; i++) lane[i] = LANE_IDS[f.lane[i]!]!;
    // Not awaited, as a simulator appends: the commit point below waits for the frames, and a failed
    // write fails it.
    void rec.appendFrame('state', {
      t: f.t,
      step: f.step,
      actors: ids,
      columns: {
        x: f.x,
        y: f.y,
        yaw: f.yaw,
        speed: f.speed,
        accel: f.accel,
        lane,
        lanePos: f.lanePos,
        routeIdx: f.routeIdx,
      },
    });
    const c = f.control;
    control.throttle[0] = c.throttle;
    control.brake[0] = c.brake;
    control.steer[0] = c.steer;
    control.gear[0] = c.gear;
    void rec.appendFrame('control', { t: f.t, step: f.step, actors: EGO, columns: control });
    void rec.appendFrame('wheels', {
      t: f.t,
      step: f.step,
      actors: EGO,
      columns: { wheels: [f.wheels.map((w) => ({ ...w }))] },
    });
    if ((s + 1) % commitEverySteps === 0) {
      await committing;
      committing = rec.flush();
      if (wait === 'awaited') await committing;
    }
  }
  await committing;
  await rec.end('completed');
  await store.close();
}

/** simrec as a user opens it: `openStore` with its defaults (synchronous=FULL). */
export const simrecPeer: Peer = {
  name: 'simrec',
  description:
    'RunRecorder.appendFrame per step into the SQLite store (defaults: durability full); each commit made ' +
    'durable while the next steps are appended, at most one commit point behind',
  record: async (args) => record(await openStore(join(args.dir, STORE_FILE)), args, BENCH_STATE_FIELDS),
  async open(dir) {
    const store = await openStore(join(dir, STORE_FILE));
    const [run] = await store.listRuns();
    const id = run!.id;
    return {
      scene: async (t) => (await sceneAt(store, id, { t })).actors.length,
      trajectory: async (actor) => (await trajectoryColumns(store, id, { actor })).t.length,
      close: () => store.close(),
    };
  },
  seekable: true,
};

/** Reported apart: the loop stops at every commit point until it is durable. */
export const simrecAwaitedPeer: Peer = {
  name: 'simrec-awaited',
  description:
    'as simrec, the loop waiting at each commit point until it is durable (as the LimSim peer does)',
  record: async (args) =>
    record(await openStore(join(args.dir, STORE_FILE)), args, BENCH_STATE_FIELDS, 'awaited'),
  readNote: 'same file layout as simrec',
};

/** Reported apart: it trades durability across a power cut for speed, which the default never does. */
export const simrecNormalPeer: Peer = {
  name: 'simrec-normal',
  description: 'as simrec, with durability: normal (survives a process crash, not a power cut)',
  record: async (args) =>
    record(
      SqliteBackend.open(join(args.dir, STORE_FILE), { durability: 'normal' }),
      args,
      BENCH_STATE_FIELDS,
    ),
  readNote: 'same file layout as simrec; read workloads would measure the same thing',
};

/** The same data with the state's floats declared f32: what a single-precision simulator would store. */
export const simrecF32Peer: Peer = {
  name: 'simrec-f32',
  description: 'as simrec, with the state fields declared f32 (values rounded to float32 as stored)',
  record: async (args) => record(await openStore(join(args.dir, STORE_FILE)), args, F32_STATE_FIELDS),
  readNote: 'same read path as simrec',
};
