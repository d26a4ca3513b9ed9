import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { McapIndexedReader, McapWriter, type IWritable } from '@mcap/core';
import { actorId, LANE_IDS, stepAtOrBefore, timeOfStep, type Frame } from '../generator.js';
import type { Peer, PeerReader } from '../peer.js';
import { CdrReader, CdrWriter } from './cdr.js';

const MCAP_FILE = 'bench.mcap';

const ACTOR_STATE_MSG = `float64 x
float64 y
float64 yaw
float64 speed
float64 accel
float64 lane_pos
int32 route_idx
string lane`;
const SCENE_MSG = `ActorState[] actors
================================================================================
MSG: simrec_bench/ActorState
string id
${ACTOR_STATE_MSG}`;
const CONTROL_MSG = 'float64 throttle\nfloat64 brake\nfloat64 steer\nint32 gear';
const WHEELS_MSG = `Wheel[] wheels
================================================================================
MSG: simrec_bench/Wheel
float64 angular_velocity
float64 torque
float64 steer
float64 suspension
float64 slip_long
float64 slip_lat`;

/** MCAP's writer needs an IWritable; @mcap/nodejs's FileHandleWritable is this, without the package. */
class FileWritable implements IWritable {
  readonly handle: FileHandle;
  private offset = 0n;
  constructor(handle: FileHandle) {
    this.handle = handle;
  }
  async write(buffer: Uint8Array): Promise<void> {
    await this.handle.write(buffer);
    this.offset += BigInt(buffer.byteLength);
  }
  position(): bigint {
    return this.offset;
  }
}

function writeState(w: CdrWriter, f: Frame, i: number): void {
  w.float64(f.x[i]!).float64(f.y[i]!).float64(f.yaw[i]!).float64(f.speed[i]!).float64(f.accel[i]!);
  w.float64(f.lanePos[i]!).int32(f.routeIdx[i]!).string(LANE_IDS[f.lane[i]!]!);
}

interface DecodedState {
  id?: string;
  x: number;
  y: number;
  yaw: number;
  speed: number;
  accel: number;
  lanePos: number;
  routeIdx: number;
  lane: string;
}

const readState = (r: CdrReader, id?: string): DecodedState => ({
  ...(id === undefined ? {} : { id }),
  x: r.float64(),
  y: r.float64(),
  yaw: r.float64(),
  speed: r.float64(),
  accel: r.float64(),
  lanePos: r.float64(),
  routeIdx: r.int32(),
  lane: r.string(),
});

/** One actor's state out of a frame: the others' are stepped over, not decoded into objects. */
function findInScene(data: Uint8Array, actor: string): DecodedState | undefined {
  const r = new CdrReader(data);
  const n = r.uint32();
  for (let k = 0; k < n; k++) {
    const id = r.string();
    if (id === actor) return readState(r, id);
    r.skipState();
  }
  return undefined;
}

function readScene(data: Uint8Array): DecodedState[] {
  const r = new CdrReader(data);
  const n = r.uint32();
  const out = new Array<DecodedState>(n);
  for (let k = 0; k < n; k++) out[k] = readState(r, r.string());
  return out;
}

type Layout = 'per-state' | 'per-frame';

async function recordMcap(layout: Layout, { dir, frames, commitEverySteps }: Parameters<Peer['record']>[0]) {
  const { actors, steps } = frames.size;
  const writable = new FileWritable(await open(join(dir, MCAP_FILE), 'w'));
  // The defaults: 1 MiB chunks, uncompressed (@mcap/core has no compressor of its own), message and
  // chunk indexes, statistics and summary offsets.
  const writer = new McapWriter({ writable });
  await writer.start({ profile: 'ros2', library: 'simrec-bench' });
  const schema = async (name: string, text: string): Promise<number> =>
    writer.registerSchema({ name, encoding: 'ros2msg', data: new TextEncoder().encode(text) });
  const channel = async (topic: string, schemaId: number): Promise<number> =>
    writer.registerChannel({ topic, schemaId, messageEncoding: 'cdr', metadata: new Map() });
  const ids = Array.from({ length: actors }, (_, i) => actorId(i));
  const stateChannels: number[] = [];
  let sceneChannel = -1;
  if (layout === 'per-state') {
    const stateSchema = await schema('simrec_bench/ActorState', ACTOR_STATE_MSG);
    for (const id of ids) stateChannels.push(await channel(`/${id}/state`, stateSchema));
  } else sceneChannel = await channel('/scene', await schema('simrec_bench/Scene', SCENE_MSG));
  const controlChannel = await channel('/ego/control', await schema('simrec_bench/Control', CONTROL_MSG));
  const wheelsChannel = await channel('/ego/wheels', await schema('simrec_bench/Wheels', WHEELS_MSG));
  const w = new CdrWriter();
  let sequence = 0;
  for (let s = 0; s < steps; s++) {
    const f = frames.next();
    const logTime = BigInt(f.t) * 1000n;
    const add = (channelId: number, data: Uint8Array): Promise<void> =>
      writer.addMessage({ channelId, sequence: sequence++, logTime, publishTime: logTime, data });
    if (layout === 'per-state')
      for (let i = 0; i < actors; i++) {
        writeState(w.reset(), f, i);
        await add(stateChannels[i]!, w.bytes());
      }
    else {
      w.reset().uint32(actors);
      for (let i = 0; i < actors; i++) writeState(w.string(ids[i]!), f, i);
      await add(sceneChannel, w.bytes());
    }
    const c = f.control;
    w.reset().float64(c.throttle).float64(c.brake).float64(c.steer).int32(c.gear);
    await add(controlChannel, w.bytes());
    w.reset().uint32(f.wheels.length);
    for (const wheel of f.wheels)
      w.float64(wheel.angularVelocity)
        .float64(wheel.torque)
        .float64(wheel.steer)
        .float64(wheel.suspension)
        .float64(wheel.slipLong)
        .float64(wheel.slipLat);
    await add(wheelsChannel, w.bytes());
    // What MCAP has handed to the file is made durable at the same points as every other peer; the
    // chunk still being filled lives only in memory (MCAP's design), so this is its best case.
    if ((s + 1) % commitEverySteps === 0) await writable.handle.sync();
  }
  await writer.end();
  await writable.handle.sync();
  await writable.handle.close();
}

async function openMcap(layout: Layout, dir: string, size: Parameters<NonNullable<Peer['open']>>[1]) {
  const handle = await open(join(dir, MCAP_FILE), 'r');
  const fileSize = BigInt((await handle.stat()).size);
  const reader = await McapIndexedReader.Initialize({
    readable: {
      size: async () => fileSize,
      async read(offset, length) {
        const buffer = Buffer.alloc(Number(length));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, Number(offset));
        if (bytesRead !== buffer.length)
          throw new Error(`Read only ${bytesRead} bytes from offset ${offset}, expected ${length}`);
        return buffer;
      },
    },
  });
  const topicOf = (channelId: number): string => reader.channelsById.get(channelId)!.topic;
  const result: PeerReader = {
    async scene(t) {
      const at = BigInt(timeOfStep(size, stepAtOrBefore(size, t))) * 1000n;
      let states = 0;
      for await (const m of reader.readMessages({ startTime: at, endTime: at })) {
        const topic = topicOf(m.channelId);
        if (layout === 'per-frame' && topic === '/scene') states += readScene(m.data).length;
        else if (topic.endsWith('/state')) {
          readState(new CdrReader(m.data));
          states++;
        }
      }
      return states;
    },
    async trajectory(actor) {
      let states = 0;
      if (layout === 'per-state')
        for await (const m of reader.readMessages({ topics: [`/${actor}/state`] })) {
          readState(new CdrReader(m.data));
          states++;
        }
      else
        for await (const m of reader.readMessages({ topics: ['/scene'] }))
          if (findInScene(m.data, actor)) states++;
      return states;
    },
    close: () => handle.close(),
  };
  return result;
}

export const mcapPerStatePeer: Peer = {
  name: 'mcap-per-state',
  description: '@mcap/core McapWriter, 1 MiB uncompressed indexed chunks, one CDR message per actor-state',
  record: (args) => recordMcap('per-state', args),
  open: (dir, size) => openMcap('per-state', dir, size),
  seekable: true,
};

export const mcapPerFramePeer: Peer = {
  name: 'mcap-per-frame',
  description: '@mcap/core McapWriter, 1 MiB uncompressed indexed chunks, one CDR message per frame',
  record: (args) => recordMcap('per-frame', args),
  open: (dir, size) => openMcap('per-frame', dir, size),
  seekable: true,
};
