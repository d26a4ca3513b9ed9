import { closeSync, openSync, writeSync } from 'node:fs';
import { invalid } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { RoadNetwork } from '../../model/roadnet.js';
import { presenceAt, type ActorInfo, type PresenceInterval } from '../../model/run.js';
import type { RunSource } from '../../model/run-ports.js';
import { StreamWalk } from '../../model/sample-series.js';
import type { Sample, StreamInfo } from '../../model/stream.js';
import { readRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { signalHeads } from '../../roadnet/signal-heads.js';
import { ByteWriter, CarlaFile, writeFrameStart, writeHeader, type CarlaHeader } from './carla-bytes.js';
import { readFrames } from './carla-frames.js';
import { ACTOR_TYPE, ATTRIBUTE_TYPE, MAGIC, PACKET, packetName } from './carla-layout.js';
import { RECORD_CODECS, type Fields } from './carla-records.js';
import { ACTOR_STREAMS, EVENT_STREAMS, FRAME_STREAM } from './carla-streams.js';
import { CRITERIA_ATTACHMENT } from './scenario-criteria.js';

export interface CarlaExportOptions {
  warn?: (message: string) => void;
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
  /** The map CARLA's replayer loads (a run from elsewhere): default the run's `map` or `town`, else none. */
  map?: string;
  /** A recording made with the CARLA that will replay the file: its blueprints' numbers (UIds). */
  blueprintsFrom?: string;
  /** Keeps a file beside the output (ScenarioRunner's criteria: `_criteria.json`). */
  beside?: (name: string, data: Uint8Array) => void;
  /**
   * Samples held at once of all the streams a run from elsewhere is written from (their times apart):
   * memory does not grow with the run's length or width. Tests make it small.
   */
  windowSamples?: number;
}

export interface CarlaExportResult {
  frames: number;
  actors: number;
  /** `recording`: a run imported from CARLA, written back as it was read; `converted`: a run from elsewhere. */
  mode: 'recording' | 'converted';
}

/**
 * The blueprint each kind of actor from elsewhere becomes. CARLA's replayer spawns an actor by its
 * description's UId (UActorDispatcher::SpawnActor indexes its spawn functions with it), a number each
 * CARLA build gives its blueprints as it loads them; the ones known here are those CARLA 0.9.10 and
 * 0.9.13 gave (ScenarioRunner's recordings: the Lincoln 26, the Patrol 13). `--blueprints-from` reads
 * them from a recording made with the CARLA that is to replay the file.
 */
export const BLUEPRINTS: Readonly<Record<string, string>> = {
  ego: 'vehicle.lincoln.mkz_2017',
  vehicle: 'vehicle.nissan.patrol',
  cyclist: 'vehicle.diamondback.century',
  pedestrian: 'walker.pedestrian.0001',
};
export const KNOWN_UIDS: Readonly<Record<string, number>> = {
  'vehicle.lincoln.mkz_2017': 26,
  'vehicle.nissan.patrol': 13,
};
const DEFAULT_BOXES: Readonly<Record<string, { length: number; width: number; height: number }>> = {
  vehicle: { length: 4.5, width: 1.8, height: 1.5 },
  cyclist: { length: 1.8, width: 0.6, height: 1.7 },
  pedestrian: { length: 0.5, width: 0.5, height: 1.8 },
};

/** Bytes gathered before they go to the file. */
const FLUSH_BYTES = 1 << 20;

class OutputFile {
  private readonly fd: number;
  readonly out = new ByteWriter(FLUSH_BYTES * 2);
  constructor(path: string) {
    this.fd = openSync(path, 'w');
  }
  maybeFlush(): void {
    if (this.out.length >= FLUSH_BYTES) this.flush();
  }
  flush(): void {
    const view = this.out.view();
    let done = 0;
    while (done < view.length) done += writeSync(this.fd, view, done, view.length - done);
    this.out.reset();
  }
  close(): void {
    this.flush();
    closeSync(this.fd);
  }
}

/** A stream read forward, a batch at a time: the writer holds a batch of each stream, never a run. */
class Cursor {
  private readonly iterator: AsyncIterator<Sample[]>;
  private batch: Sample[] = [];
  private i = 0;
  private done = false;
  readonly id: string;
  constructor(source: RunSource, stream: string) {
    this.id = stream;
    this.iterator = source.samples(stream)[Symbol.asyncIterator]();
  }
  async peek(): Promise<Sample | undefined> {
    while (this.i >= this.batch.length && !this.done) {
      const next = await this.iterator.next();
      if (next.done) this.done = true;
      else {
        this.batch = next.value;
        this.i = 0;
      }
    }
    return this.batch[this.i];
  }
  async next(): Promise<Sample | undefined> {
    const s = await this.peek();
    if (s) this.i++;
    return s;
  }
  /** The samples of this step, passing over those of earlier steps (a light's pose, never written). */
  async at(step: number): Promise<Sample[]> {
    const found: Sample[] = [];
    for (let s = await this.peek(); s && s.step <= step; s = await this.peek()) {
      this.i++;
      if (s.step === step) found.push(s);
    }
    return found;
  }
}

const payload = (sample: Sample): Fields => sample;

/** Writes one packet: id, size (patched once known), count, records. */
function packet(out: ByteWriter, id: number, count: number, records: () => void): void {
  out.u8(id);
  const at = out.length;
  out.u32(0);
  out.u16(count);
  records();
  out.u32At(at, out.length - at - 4);
}

/**
 * A run imported from a CARLA recording (it has `carla_frame`) written back as it was read: every
 * frame's packets in their order from its `packets`, every record from the streams the importer put it
 * in (or its bytes, where the importer kept them), so the file is the one read, byte for byte.
 */
async function writeRecording(
  source: RunSource,
  streams: StreamInfo[],
  file: OutputFile,
  options: CarlaExportOptions,
): Promise<CarlaExportResult> {
  const { run } = source;
  const carla = (run.metadata.carla ?? {}) as Partial<CarlaHeader>;
  const header: CarlaHeader = {
    version: typeof carla.version === 'number' ? carla.version : 1,
    magic: typeof carla.magic === 'string' ? carla.magic : MAGIC,
    date: typeof carla.date === 'number' ? carla.date : Math.floor(run.begin / 1e6),
    map: typeof carla.map === 'string' ? carla.map : String(run.metadata.map ?? ''),
  };
  const out = file.out;
  writeHeader(out, header);
  const known = new Set(streams.map((s) => s.id));
  const cursors = new Map<string, Cursor>();
  const cursor = (id: string, frame: number): Cursor => {
    let c = cursors.get(id);
    if (!c) {
      if (!known.has(id))
        throw invalid(
          `run ${run.id}: frame ${frame} names stream ${id}, which the run does not have (was it removed?)`,
        );
      cursors.set(id, (c = new Cursor(source, id)));
    }
    return c;
  };
  const frames = new Cursor(source, FRAME_STREAM);
  const total = streams.find((s) => s.id === FRAME_STREAM)!.samples;
  let written = 0;
  const scratch = new ByteWriter(256);
  for (let f = await frames.next(); f; f = await frames.next()) {
    if (written % 64 === 0) options.signal?.throwIfAborted();
    const step = f.step;
    const where = `run ${run.id} frame ${step}`;
    const raw = [...((f.raw as [number, string][] | undefined) ?? [])];
    const unknown = [...((f.unknown as [number, string][] | undefined) ?? [])];
    // Per actor and stream, the samples of this frame and how many the frame's packets took.
    const taken = new Map<string, { samples: Sample[]; used: number }>();
    const samplesOf = async (id: string): Promise<{ samples: Sample[]; used: number }> => {
      let t = taken.get(id);
      if (!t) taken.set(id, (t = { samples: await cursor(id, step).at(step), used: 0 }));
      return t;
    };
    for (const token of String(f.packets).split(' ')) {
      const id = Number.parseInt(token, 10);
      const rest = token.slice(String(id).length);
      if (rest === '') {
        if (id === PACKET.FrameStart)
          writeFrameStart(out, {
            id: f.frame as number,
            durationThis: f.duration as number,
            elapsed: f.elapsed as number,
          });
        else if (id === PACKET.FrameEnd) {
          out.u8(id);
          out.u32(0);
        } else if (id === PACKET.PlatformTime || id === PACKET.VisualTime || id === PACKET.FrameCounter) {
          out.u8(id);
          out.u32(8);
          if (id === PACKET.FrameCounter) out.u64(f.frameCounter as number);
          else out.f64((id === PACKET.PlatformTime ? f.platformTime : f.visualTime) as number);
        } else throw invalid(`${where}: packet token ${JSON.stringify(token)} is not one simrec writes`);
      } else if (rest === '?') {
        const [pid, bytes] = unknown.shift() ?? [];
        if (pid !== id)
          throw invalid(`${where}: packet ${id} kept as bytes is missing from the frame's unknown list`);
        const body = Buffer.from(bytes!, 'base64');
        out.u8(id);
        out.u32(body.length);
        out.bytes(body);
      } else if (rest.startsWith('#')) {
        const count = Number(rest.slice(1));
        const stream = EVENT_STREAMS[id]?.name;
        if (!stream) throw invalid(`${where}: packet ${packetName(id)} is not an event packet`);
        const records: Sample[] = [];
        for (let i = 0; i < count; i++) {
          const c = cursor(stream, step);
          const s = await c.next();
          if (!s || s.step !== step)
            throw invalid(
              `${where}: ${stream} has ${i} of the ${count} ${packetName(id)} records the frame had`,
            );
          records.push(s);
        }
        packet(out, id, count, () => {
          for (const s of records) {
            if (typeof s.raw === 'string') out.bytes(Buffer.from(s.raw, 'base64'));
            else
              RECORD_CODECS[id]!.encode(
                out,
                s.actorId === undefined ? undefined : Number(s.actorId),
                payload(s),
                `${where} ${stream}`,
              );
          }
        });
      } else if (rest.startsWith(':')) {
        const ids = rest.length > 1 ? rest.slice(1).split(',') : [];
        const stream = ACTOR_STREAMS[id]?.name;
        if (!stream) throw invalid(`${where}: packet ${packetName(id)} is not a per-actor packet`);
        scratch.reset();
        for (const a of ids) {
          if (a.startsWith('!')) {
            const [pid, bytes] = raw.shift() ?? [];
            if (pid !== id)
              throw invalid(
                `${where}: a ${packetName(id)} record kept as bytes is missing from the frame's raw list`,
              );
            scratch.bytes(Buffer.from(bytes!, 'base64'));
            continue;
          }
          const t = await samplesOf(`${a}/${stream}`);
          // Kinematics was read into the actor's one Position sample of the frame.
          const s = id === PACKET.Kinematics ? t.samples[0] : t.samples[t.used++];
          if (!s) throw invalid(`${where}: ${a}/${stream} has no sample for ${packetName(id)}`);
          RECORD_CODECS[id]!.encode(scratch, Number(a), payload(s), `${where} ${a}/${stream}`);
        }
        packet(out, id, ids.length, () => out.bytes(scratch.view()));
      } else throw invalid(`${where}: packet token ${JSON.stringify(token)} is not one simrec writes`);
    }
    file.maybeFlush();
    options.onProgress?.(++written, total);
  }
  return { frames: written, actors: (await source.actors()).length, mode: 'recording' };
}

/** The UIds a recording gives the blueprints it spawns. */
export function blueprintNumbers(file: string): Map<string, number> {
  const carla = CarlaFile.open(file);
  const uids = new Map<string, number>();
  try {
    for (const frame of readFrames(carla, { skim: true }))
      for (const r of frame.eventRecords)
        if (r.packet === PACKET.EventAdd && r.raw === undefined) {
          const d = r.fields.description as { uid: number; id: string };
          if (d.uid > 0) uids.set(d.id, d.uid);
        }
  } finally {
    carla.close();
  }
  return uids;
}

interface OutActor {
  info: ActorInfo;
  carlaId: number;
  type: number;
  blueprint: string;
  uid: number;
  roleName?: string;
  state?: StreamInfo;
  control?: StreamInfo;
  lights?: StreamInfo;
  present: boolean;
  box: { length: number; width: number; height: number };
  /** A traffic light's head: the light it shows and the link. */
  head?: { light: string; linkIndex: number; x: number; y: number; z: number; yaw: number };
}

const num = (v: unknown, fallback = 0): number =>
  typeof v === 'number' && Number.isFinite(v) ? v : fallback;

/**
 * A run from elsewhere written in the layout of the newest CARLA (0.9.15/0.9.16 with additional data):
 * each frame FrameStart, VisualTime, EventAdd, EventDel, EventParent, Collision, Position, State,
 * AnimVehicle, AnimWalker, VehicleLight, AnimVehicleWheels, AnimBiker, Kinematics, BoundingBox,
 * PlatformTime, WalkerBones, FrameEnd. docs/formats/carla.md says what each actor becomes.
 */
async function writeConverted(
  source: RunSource,
  streams: StreamInfo[],
  file: OutputFile,
  options: CarlaExportOptions,
): Promise<CarlaExportResult> {
  const warn = options.warn ?? (() => {});
  const { run } = source;
  const actors = await source.actors();
  const byId = new Map(streams.map((s) => [s.id, s]));
  const uids = new Map(Object.entries(KNOWN_UIDS));
  if (options.blueprintsFrom)
    for (const [id, uid] of blueprintNumbers(options.blueprintsFrom)) uids.set(id, uid);
  const network = await readRoadNetwork(source, run.id);
  const out: OutActor[] = [];
  const skipped = new Map<string, number>();
  const numeric = actors.every((a) => /^[1-9]\d{0,8}$/.test(a.id));
  let nextId = 1;
  const carlaIdOf = (a: ActorInfo): number => (numeric ? Number(a.id) : nextId++);
  const noUid = new Set<string>();
  for (const a of actors) {
    const state = byId.get(`${a.id}/state`);
    const kind =
      a.kind === 'ego' || a.kind === 'vehicle' || a.kind === 'cyclist' || a.kind === 'pedestrian'
        ? a.kind
        : undefined;
    if (kind && state && state.samples > 0) {
      const own =
        a.sourceClass &&
        /^(vehicle|walker\.pedestrian)\.[\w.-]+$/.test(a.sourceClass) &&
        uids.has(a.sourceClass)
          ? a.sourceClass
          : undefined;
      const blueprint = own ?? BLUEPRINTS[kind]!;
      const uid = uids.get(blueprint) ?? 0;
      if (uid === 0) noUid.add(blueprint);
      out.push({
        info: a,
        carlaId: carlaIdOf(a),
        type: kind === 'pedestrian' ? ACTOR_TYPE.Walker : ACTOR_TYPE.Vehicle,
        blueprint,
        uid,
        roleName: kind === 'ego' ? 'hero' : a.id,
        state,
        ...(byId.get(`${a.id}/control`) ? { control: byId.get(`${a.id}/control`)! } : {}),
        ...(byId.get(`${a.id}/lights`) ? { lights: byId.get(`${a.id}/lights`)! } : {}),
        present: false,
        box:
          a.extents && a.extents.length > 0 ? a.extents : DEFAULT_BOXES[kind === 'ego' ? 'vehicle' : kind]!,
      });
    } else if (a.kind !== 'traffic_light') skipped.set(a.kind, (skipped.get(a.kind) ?? 0) + 1);
  }
  out.push(...lightHeads(actors, byId, network, () => (numeric ? 0 : nextId++), warn));
  if (numeric) {
    // Heads of a run whose ids are numbers take numbers after them.
    let free = Math.max(0, ...out.filter((o) => !o.head).map((o) => o.carlaId)) + 1;
    for (const o of out) if (o.head) o.carlaId = free++;
  }
  if (skipped.size)
    warn(
      `${[...skipped].map(([k, n]) => `${n} ${k}`).join(', ')} actors left out: CARLA's replayer replays vehicles, walkers and traffic lights, and these have no pose or no CARLA counterpart`,
    );
  for (const blueprint of noUid)
    warn(
      `no blueprint number (UId) is known for ${blueprint}: written as 0, which CARLA's replayer refuses to spawn; give --blueprints-from a recording made with your CARLA that spawns ${blueprint}`,
    );
  out.sort((a, b) => a.carlaId - b.carlaId);

  // Every stream a frame holds the latest sample of, walked forward in time a window at a time (a
  // batch of sample objects held for each at once took memory in proportion to the run's width).
  const held = [
    ...new Set(
      out.flatMap((o) =>
        o.head
          ? [byId.get(`${o.head.light}/signal`)]
          : [o.state, o.type === ACTOR_TYPE.Vehicle ? o.control : undefined, o.lights],
      ),
    ),
  ].filter((stream): stream is StreamInfo => stream !== undefined && stream.samples > 0);
  const { walk, series } = await StreamWalk.over(source, held, options.windowSamples);
  const hold = (stream: StreamInfo | undefined, t: number): Sample | undefined =>
    stream ? series.get(stream.id)?.latestAt(t) : undefined;

  // Frames: every time an actor has a pose.
  const times = new Set<number>();
  for (const o of out) if (o.state) for (const t of series.get(o.state.id)!.times) times.add(t);
  const frames = [...times].sort((a, b) => a - b);
  const t0 = frames[0] ?? run.begin;
  const header: CarlaHeader = {
    version: 1,
    magic: MAGIC,
    date: Math.floor(t0 / 1e6),
    map: options.map ?? '',
  };
  const bytes = file.out;
  writeHeader(bytes, header);

  const collisions = byId.get('events') ? await collisionsOf(source, out) : [];
  let collisionId = 0;
  const lastState = new Map<string, { char: string; since: number }>();
  const rec = RECORD_CODECS;
  for (let k = 0; k < frames.length; k++) {
    if (k % 64 === 0) options.signal?.throwIfAborted();
    const t = frames[k]!;
    const elapsed = (t - t0) / 1e6;
    const duration = k + 1 < frames.length ? (frames[k + 1]! - t0) / 1e6 - elapsed : -1;
    const where = `run ${run.id} at ${elapsed} s`;
    await walk.advanceTo(t);
    const added: OutActor[] = [];
    const removed: OutActor[] = [];
    const poses = new Map<OutActor, Sample>();
    for (const o of out) {
      if (o.head) {
        const alive = presentAt(o.info.presence, t, true);
        if (alive && !o.present) added.push(o);
        if (!alive && o.present) removed.push(o);
        o.present = alive;
        continue;
      }
      const s = hold(o.state, t);
      const alive = s !== undefined && aliveAt(o, s, t);
      if (alive) poses.set(o, s);
      if (alive && !o.present) added.push(o);
      if (!alive && o.present) removed.push(o);
      o.present = alive;
    }
    writeFrameStart(bytes, { id: k + 1, durationThis: duration, elapsed });
    bytes.u8(PACKET.VisualTime);
    bytes.u32(8);
    bytes.f64(elapsed);
    packet(bytes, PACKET.EventAdd, added.length, () => {
      for (const o of added) {
        const pose = o.head
          ? { x: o.head.x, y: o.head.y, z: o.head.z, roll: 0, pitch: 0, yaw: o.head.yaw }
          : payload(poses.get(o)!);
        rec[PACKET.EventAdd]!.encode(
          bytes,
          o.carlaId,
          {
            type: o.type,
            x: pose.x,
            y: pose.y,
            z: num(pose.z),
            roll: num(pose.roll),
            pitch: num(pose.pitch),
            yaw: num(pose.yaw),
            description: describe(o),
          },
          where,
        );
      }
    });
    packet(bytes, PACKET.EventDel, removed.length, () => {
      for (const o of removed) bytes.u32(o.carlaId);
    });
    packet(bytes, PACKET.EventParent, 0, () => {});
    // Each at the first frame at or after it, between actors in CARLA's world then.
    const hits = collisions.filter((c) => !c.written && c.t <= t && c.a.present && (!c.b || c.b.present));
    packet(bytes, PACKET.Collision, hits.length, () => {
      for (const c of hits) {
        c.written = true;
        rec[PACKET.Collision]!.encode(
          bytes,
          undefined,
          {
            collision: collisionId++,
            actor1: c.a.carlaId,
            actor2: c.b?.carlaId ?? 0xffffffff,
            hero1: c.a.roleName === 'hero',
            hero2: c.b?.roleName === 'hero',
          },
          where,
        );
      }
    });
    const moving = out.filter((o) => poses.has(o));
    packet(bytes, PACKET.Position, moving.length, () => {
      for (const o of moving)
        rec[PACKET.Position]!.encode(bytes, o.carlaId, payload(poses.get(o)!), `${where} ${o.info.id}`);
    });
    const heads = out.filter((o) => o.head && o.present);
    const lightRecords: Fields[] = [];
    for (const o of heads) {
      const signal = hold(byId.get(`${o.head!.light}/signal`), t);
      const char = String(signal?.state ?? 'O')[o.head!.linkIndex] ?? 'O';
      const key = `${o.head!.light}:${o.head!.linkIndex}`;
      const last = lastState.get(key);
      if (!last || last.char !== char) lastState.set(key, { char, since: t });
      lightRecords.push({
        carlaState: carlaLightState(char),
        frozen: false,
        elapsed: (t - lastState.get(key)!.since) / 1e6,
      });
    }
    packet(bytes, PACKET.State, heads.length, () => {
      heads.forEach((o, i) => rec[PACKET.State]!.encode(bytes, o.carlaId, lightRecords[i]!, where));
    });
    const vehicles = moving.filter((o) => o.type === ACTOR_TYPE.Vehicle);
    const controls = vehicles.map((o) => hold(o.control, t));
    packet(bytes, PACKET.AnimVehicle, vehicles.length, () => {
      vehicles.forEach((o, i) =>
        rec[PACKET.AnimVehicle]!.encode(bytes, o.carlaId, controls[i] ? payload(controls[i]) : {}, where),
      );
    });
    const walkers = moving.filter((o) => o.type === ACTOR_TYPE.Walker);
    packet(bytes, PACKET.AnimWalker, walkers.length, () => {
      for (const o of walkers)
        rec[PACKET.AnimWalker]!.encode(bytes, o.carlaId, { speed: Math.abs(speedOf(poses.get(o)!)) }, where);
    });
    const lights = vehicles.map((o) => hold(o.lights, t));
    packet(bytes, PACKET.VehicleLight, vehicles.length, () => {
      vehicles.forEach((o, i) => {
        const state = lights[i]
          ? num(lights[i].state)
          : (num(controls[i]?.brake) > 0 ? 0x8 : 0) | (num(controls[i]?.gear) < 0 ? 0x40 : 0);
        rec[PACKET.VehicleLight]!.encode(bytes, o.carlaId, { state }, where);
      });
    });
    packet(bytes, PACKET.AnimVehicleWheels, 0, () => {});
    packet(bytes, PACKET.AnimBiker, 0, () => {});
    if (moving.length)
      packet(bytes, PACKET.Kinematics, moving.length, () => {
        for (const o of moving)
          rec[PACKET.Kinematics]!.encode(bytes, o.carlaId, velocityOf(poses.get(o)!), where);
      });
    const boxed = added.filter((o) => !o.head);
    packet(bytes, PACKET.BoundingBox, boxed.length, () => {
      for (const o of boxed)
        rec[PACKET.BoundingBox]!.encode(
          bytes,
          o.carlaId,
          {
            x: 0,
            y: 0,
            z: o.box.height / 2,
            extentX: o.box.length / 2,
            extentY: o.box.width / 2,
            extentZ: o.box.height / 2,
          },
          where,
        );
    });
    bytes.u8(PACKET.PlatformTime);
    bytes.u32(8);
    bytes.f64(elapsed);
    packet(bytes, PACKET.WalkerBones, 0, () => {});
    bytes.u8(PACKET.FrameEnd);
    bytes.u32(0);
    file.maybeFlush();
    options.onProgress?.(k + 1, frames.length);
  }
  return { frames: frames.length, actors: out.length, mode: 'converted' };
}

/** Present at t by the run's presence; without presence, as the caller says. */
function presentAt(presence: PresenceInterval[] | undefined, t: number, otherwise: boolean): boolean {
  return presence?.length ? presenceAt(presence, t) !== undefined : otherwise;
}

/**
 * Whether an actor is in CARLA's world at t, its latest pose being `s`: inside a presence interval
 * with a pose taken in it; without presence, from its first pose to its last.
 */
function aliveAt(o: OutActor, s: Sample, t: number): boolean {
  const presence = o.info.presence;
  if (presence?.length) {
    const stretch = presenceAt(presence, t);
    return stretch !== undefined && s.t >= stretch.from;
  }
  return o.state!.end !== null && t <= o.state!.end;
}

function describe(o: OutActor): JsonObject {
  const attributes = o.roleName === undefined ? [] : [[ATTRIBUTE_TYPE.String, 'role_name', o.roleName]];
  return { uid: o.uid, id: o.blueprint, attributes };
}

/** A light's character to ETrafficLightState: red (and red-yellow) Red, yellow Yellow, green Green, else Off. */
function carlaLightState(char: string): number {
  if (char === 'y' || char === 'Y') return 1;
  if (char === 'g' || char === 'G') return 2;
  if (char === 'r' || char === 's' || char === 'u') return 0;
  return 3;
}

function speedOf(s: Sample): number {
  if (typeof s.speed === 'number') return s.speed;
  return Math.hypot(num(s.vx), num(s.vy));
}

/** The velocity a state has, or its speed along its heading. */
function velocityOf(s: Sample): Fields {
  const yaw = num(s.yaw);
  const vx = typeof s.vx === 'number' ? s.vx : speedOf(s) * Math.cos(yaw);
  const vy = typeof s.vy === 'number' ? s.vy : speedOf(s) * Math.sin(yaw);
  return { vx, vy, vz: num(s.vz), wx: num(s.wx), wy: num(s.wy), wz: num(s.wz) };
}

/**
 * Traffic lights: CARLA has one actor per light head. A head stands where SUMO's link begins (the stop
 * line, roadnet/signal-heads.ts) and shows its link's character; a light with a `state` of its own and
 * no network is one head showing its first character. CARLA's replayer creates no light: it finds the
 * map's own light standing at that place, to the centimetre (CarlaReplayerHelper::FindTrafficLightAt).
 */
function lightHeads(
  actors: ActorInfo[],
  byId: Map<string, StreamInfo>,
  network: RoadNetwork | undefined,
  nextId: () => number,
  warn: (m: string) => void,
): OutActor[] {
  const lights = actors.filter((a) => a.kind === 'traffic_light' && byId.has(`${a.id}/signal`));
  if (!lights.length) return [];
  const heads = network ? signalHeads(network) : [];
  const out: OutActor[] = [];
  const unplaced: string[] = [];
  for (const light of lights) {
    const own = heads.filter((h) => h.light === light.id);
    if (!own.length) {
      unplaced.push(light.id);
      continue;
    }
    for (const h of own)
      out.push({
        info: light,
        carlaId: nextId(),
        type: ACTOR_TYPE.TrafficLight,
        blueprint: 'traffic.traffic_light',
        uid: 0,
        present: false,
        box: { length: 0, width: 0, height: 0 },
        head: {
          light: light.id,
          linkIndex: h.linkIndex,
          x: h.position[0],
          y: h.position[1],
          z: h.position[2],
          yaw: h.heading,
        },
      });
  }
  if (unplaced.length)
    warn(
      `${unplaced.length} traffic lights (${unplaced.slice(0, 3).join(', ')}${unplaced.length > 3 ? ', ...' : ''}) left out: the run's road network places none of their links`,
    );
  return out;
}

interface PendingCollision {
  t: number;
  a: OutActor;
  b?: OutActor;
  written: boolean;
}

/** The run's `collision` events between actors written, each once, at its start. */
async function collisionsOf(source: RunSource, out: OutActor[]): Promise<PendingCollision[]> {
  const byId = new Map(out.filter((o) => !o.head).map((o) => [o.info.id, o] as const));
  const found: PendingCollision[] = [];
  for await (const batch of source.samples('events'))
    for (const e of batch) {
      if (e.kind !== 'collision' || !Array.isArray(e.actors)) continue;
      const parties = (e.actors as unknown[])
        .map((id) => byId.get(String(id)))
        .filter((o): o is OutActor => o !== undefined);
      if (parties.length)
        found.push({ t: e.t, a: parties[0]!, ...(parties[1] ? { b: parties[1] } : {}), written: false });
    }
  return found;
}

/** Writes the run as a CARLA recorder file at `path` (a new file; the work layer renames it when whole). */
export async function exportCarla(
  source: RunSource,
  path: string,
  options: CarlaExportOptions = {},
): Promise<CarlaExportResult> {
  const streams = await source.streams();
  const file = new OutputFile(path);
  try {
    const recorded = streams.some((s) => s.id === FRAME_STREAM && s.samples > 0);
    const result = recorded
      ? await writeRecording(source, streams, file, options)
      : await writeConverted(source, streams, file, options);
    // ScenarioRunner's criteria go beside the recording as they came, where ScenarioRunner puts them.
    const criteria = await source.attachment(CRITERIA_ATTACHMENT);
    if (criteria) options.beside?.('_criteria.json', criteria.data);
    return result;
  } finally {
    file.close();
  }
}
