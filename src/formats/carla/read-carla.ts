import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { JsonObject } from '../../model/json.js';
import type { ActorDecl, PresenceInterval, RunInfo } from '../../model/run.js';
import type { RunSink, RunTarget } from '../../model/run-ports.js';
import type { StreamAppend } from '../../model/store-port.js';
import type { Sample, StreamDecl } from '../../model/stream.js';
import { keepRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { readRoadNetworkFile } from '../../roadnet/read-roadnet.js';
import { CarlaFile, malformed, type CarlaHeader } from './carla-bytes.js';
import {
  POSE_VELOCITIES,
  POSE_WIDTH,
  readFrames,
  type DecodedFrame,
  type FrameRecord,
  type RecordColumns,
} from './carla-frames.js';
import { ACTOR_TYPE, NOT_AN_ACTOR, PACKET, QUERY_CATEGORY, RECORD_SIZE, packetName } from './carla-layout.js';
import { ACTOR_STREAMS, EVENT_STREAMS, FRAME_FIELDS, FRAME_STREAM } from './carla-streams.js';
import { StateRows, ValueRows } from './carla-rows.js';
import { RECORD_CODECS } from './carla-records.js';
import {
  criteriaSamples,
  CRITERIA_ATTACHMENT,
  CRITERIA_FIELDS,
  readCriteriaFile,
} from './scenario-criteria.js';
import { CRITERIA_STREAM } from '../../model/standard-streams.js';

export interface CarlaImportOptions {
  warn?: (message: string) => void;
  /** Bytes read of the file read twice (once to check it, once to store it). */
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
  /** ScenarioRunner's criteria file; by default `NAME_criteria.json` beside `NAME.log`, if there. */
  criteria?: string;
  /** The map's OpenDRIVE, kept as the run's road network. */
  xodr?: string;
}

export interface CarlaImportResult {
  run: RunInfo;
  frames: number;
  actors: number;
  layout: string;
  criteria: string | null;
}

/** The events stream simrec's evaluator also writes; CARLA's collisions go there marked `source`. */
export const EVENTS_STREAM = 'events';
export const CARLA_EVENT_SOURCE = 'carla recorder';

/** Bicycles among CARLA's vehicle blueprints (base_type says so from 0.9.14; older files only name them). */
const BICYCLES = new Set(['vehicle.bh.crossbike', 'vehicle.diamondback.century', 'vehicle.gazelle.omafiets']);

/** Frames decoded before their samples are made durable. */
const BATCH_FRAMES = 256;

interface ActorScan {
  carlaId: number;
  id: string;
  type?: number;
  typeId?: string;
  uid?: number;
  attributes: [number, string, string][];
  parent?: string;
  box?: Record<string, unknown>;
  spawn?: Record<string, unknown>;
  intervals: PresenceInterval[];
  /** Created and not destroyed since. */
  present: boolean;
  /** When it was last destroyed (microseconds). */
  destroyedAt?: number;
  /** Ever created by an EventAdd (an actor only named by records is not). */
  created: boolean;
  /** Stream names its records go to. */
  streams: Set<string>;
  /** A light or a sign: no Position; its `state` is where it was created. */
  staticPose?: boolean;
}

interface Scan {
  header: CarlaHeader;
  begin: number;
  frames: number;
  lastT: number;
  lastComplete: boolean;
  actors: Map<number, ActorScan>;
  eventStreams: Set<string>;
  packets: Map<number, number>;
  kinematics: number;
  positions: number;
  collisions: number;
  unknown: Map<number, number>;
}

const frameTime = (begin: number, elapsed: number): number => begin + Math.round(elapsed * 1e6);

/** CARLA's actor kind in simrec's words. */
export function actorKind(
  type: number | undefined,
  typeId: string,
  attributes: readonly [number, string, string][],
): string {
  const attr = (name: string): string | undefined => attributes.find((a) => a[1] === name)?.[2];
  if (attr('role_name') === 'hero') return 'ego';
  if (typeId.startsWith('vehicle.'))
    return attr('base_type') === 'bicycle' || BICYCLES.has(typeId) ? 'cyclist' : 'vehicle';
  if (typeId.startsWith('walker.pedestrian')) return 'pedestrian';
  if (typeId === 'traffic.traffic_light') return 'traffic_light';
  if (typeId.startsWith('traffic.')) return 'traffic_sign';
  if (typeId.startsWith('sensor.')) return 'sensor';
  if (typeId.startsWith('static.')) return 'static';
  if (typeId === 'spectator') return 'spectator';
  if (type === ACTOR_TYPE.Vehicle) return 'vehicle';
  if (type === ACTOR_TYPE.Walker) return 'pedestrian';
  if (type === ACTOR_TYPE.TrafficLight) return 'traffic_light';
  return 'other';
}

/**
 * The CARLA releases whose recorder writes a frame like these: each release added packets it writes
 * in every frame (Recorder/CarlaRecorder.cpp at each tag; see CARLA_LAYOUTS).
 */
export function layoutOf(packets: ReadonlyMap<number, number>): string {
  const has = (id: number): boolean => (packets.get(id) ?? 0) > 0;
  if (has(PACKET.VehicleDoor)) return '0.9.16';
  if (has(PACKET.AnimVehicleWheels) || has(PACKET.AnimBiker)) return '0.9.15 - 0.9.16';
  if (has(PACKET.VisualTime) || has(PACKET.WalkerBones)) return '0.9.14';
  if (has(PACKET.VehicleLight)) return '0.9.10 - 0.9.13';
  if (has(PACKET.AnimVehicle) || has(PACKET.AnimWalker)) return '0.9.6 - 0.9.9';
  return '0.9.4 - 0.9.5';
}

function actorOf(
  scan: Scan,
  carlaId: number,
  at: FrameRecord | { offset: number; packet: number },
  warn: (m: string) => void,
): ActorScan {
  let a = scan.actors.get(carlaId);
  if (!a) {
    a = {
      carlaId,
      id: String(carlaId),
      attributes: [],
      intervals: [],
      present: false,
      created: false,
      streams: new Set(),
    };
    scan.actors.set(carlaId, a);
    if (at.packet !== PACKET.EventDel && at.packet !== PACKET.EventAdd)
      warn(
        `at byte ${at.offset}: actor ${carlaId} has a ${packetName(at.packet)} record but was never created (no EventAdd before it): kept as an actor of kind other`,
      );
  }
  return a;
}

/**
 * Pass one: the whole file read, nothing stored. Everything malformed is refused here, before a run is
 * begun; the actors, their presence and the streams they need are gathered, and what is odd but
 * readable is warned about.
 */
function scanRecording(carla: CarlaFile, warn: (m: string) => void, options: CarlaImportOptions): Scan {
  const file = carla.file;
  const begin = carla.header.date * 1_000_000;
  const scan: Scan = {
    header: carla.header,
    begin,
    frames: 0,
    lastT: begin,
    lastComplete: true,
    actors: new Map(),
    eventStreams: new Set(),
    packets: new Map(),
    kinematics: 0,
    positions: 0,
    collisions: 0,
    unknown: new Map(),
  };
  let previous: { id: number; elapsed: number; t: number } | null = null;
  const frames = readFrames(carla, {
    skim: true,
    unknownPacket: (id, offset, size) => {
      if (!scan.unknown.has(id))
        warn(
          `at byte ${offset}: unknown packet id ${id} (${size} bytes; a newer CARLA, or a custom packet): skipped by its size, kept as bytes`,
        );
      scan.unknown.set(id, (scan.unknown.get(id) ?? 0) + 1);
    },
  });
  for (const frame of frames) {
    if (scan.frames % 1000 === 0) {
      options.signal?.throwIfAborted();
      options.onProgress?.(frame.offset, 2 * carla.size);
    }
    const { id, elapsed } = frame.start;
    if (!Number.isFinite(elapsed) || !Number.isFinite(frame.start.durationThis))
      throw malformed(
        file,
        frame.offset,
        `frame ${id}: elapsed ${elapsed} s, duration ${frame.start.durationThis} s: expected seconds`,
      );
    const t = frameTime(begin, elapsed);
    if (previous && id <= previous.id)
      throw malformed(
        file,
        frame.offset,
        `frame id ${id} follows frame ${previous.id}: frame ids must increase`,
      );
    if (previous && t < previous.t)
      throw malformed(
        file,
        frame.offset,
        `frame ${id} is at ${elapsed} s, before frame ${previous.id} at ${previous.elapsed} s: a frame going back in time`,
      );
    previous = { id, elapsed, t };
    scan.frames++;
    scan.lastT = t;
    scan.lastComplete = frame.complete;
    for (const token of frame.tokens) {
      const pid = Number.parseInt(token, 10);
      scan.packets.set(pid, (scan.packets.get(pid) ?? 0) + 1);
    }
    for (const r of frame.eventRecords) scanEvent(scan, r, t, frame, warn);
    // Positions first: CARLA writes them before the other per-actor packets of a frame.
    for (const pose of frame.poses) {
      gatherActors(scan, pose, warn);
      for (let i = 0; i < pose.count; i++) {
        if (pose.raw[i] !== undefined) continue;
        scan.positions++;
        if (!Number.isNaN(pose.values[POSE_WIDTH * i + POSE_VELOCITIES]!)) scan.kinematics++;
      }
    }
    for (const records of frame.valued) gatherActors(scan, records, warn);
    for (const r of frame.actorRecords) {
      if (r.raw !== undefined) continue;
      actorOf(scan, r.actor!, r, warn).streams.add(ACTOR_STREAMS[r.packet]!.name);
    }
  }
  // Actors with no Position that stand still (lights, signs) are drawn where they were created.
  for (const a of scan.actors.values())
    if (
      !a.streams.has('state') &&
      a.spawn &&
      (a.type === ACTOR_TYPE.TrafficLight || a.type === ACTOR_TYPE.TrafficSign)
    ) {
      a.streams.add('state');
      a.staticPose = true;
    }
  return scan;
}

/** The actors of records read as columns, each with the stream its records go to. */
function gatherActors(scan: Scan, records: RecordColumns, warn: (m: string) => void): void {
  const stream = ACTOR_STREAMS[records.packet]!.name;
  const size = RECORD_SIZE[records.packet]!;
  for (let i = 0; i < records.count; i++)
    if (records.raw[i] === undefined) {
      const at = { offset: records.offset + size * i, packet: records.packet };
      actorOf(scan, records.actors[i]!, at, warn).streams.add(stream);
    }
}

function scanEvent(
  scan: Scan,
  r: FrameRecord,
  t: number,
  frame: DecodedFrame,
  warn: (m: string) => void,
): void {
  scan.eventStreams.add(EVENT_STREAMS[r.packet]!.name);
  if (r.packet === PACKET.Collision) {
    scan.collisions++;
    return;
  }
  if (r.actor === undefined) return;
  if (r.packet === PACKET.EventAdd) {
    const a = actorOf(scan, r.actor, r, warn);
    if (a.present) {
      warn(
        `at byte ${r.offset}: actor ${r.actor} is created again in frame ${frame.start.id} while it exists (created at ${(a.intervals.at(-1)!.from - scan.begin) / 1e6} s): the second creation is kept with its frame, the actor's presence goes on`,
      );
      return;
    }
    const d = r.fields.description as
      { uid?: number; id?: string; attributes?: [number, string, string][] } | undefined;
    if (!a.created && d) {
      a.type = r.fields.type as number;
      a.typeId = d.id ?? '';
      a.uid = d.uid ?? 0;
      a.attributes = d.attributes ?? [];
      a.spawn = r.fields;
    }
    a.created = true;
    a.present = true;
    a.intervals.push({ from: t, to: null });
  } else if (r.packet === PACKET.EventDel) {
    const a = scan.actors.get(r.actor);
    if (!a || !a.created) {
      warn(
        `at byte ${r.offset}: actor ${r.actor} is destroyed in frame ${frame.start.id} but was never created: ignored (the record is kept)`,
      );
      return;
    }
    if (!a.present) {
      warn(
        `at byte ${r.offset}: actor ${r.actor} is removed twice: destroyed in frame ${frame.start.id}, already destroyed at ${(a.destroyedAt! - scan.begin) / 1e6} s; the second is ignored (the record is kept)`,
      );
      return;
    }
    const open = a.intervals.at(-1)!;
    // Destroyed as the frame begins: CARLA records no position for it in this frame.
    if (t > open.from) open.to = t;
    else a.intervals.pop();
    a.present = false;
    a.destroyedAt = t;
  } else if (r.packet === PACKET.EventParent) {
    actorOf(scan, r.actor, r, warn).parent = r.fields.parent as string;
  } else if (r.packet === PACKET.BoundingBox) {
    const a = actorOf(scan, r.actor, r, warn);
    a.box ??= r.fields;
  }
}

/** The actor as simrec declares it: kind, blueprint, extents from its bounding box, CARLA's attributes. */
function actorDecl(a: ActorScan): ActorDecl {
  const typeId = a.typeId ?? '';
  const attributes: JsonObject = {};
  for (const [, id, value] of a.attributes) attributes[id] = value;
  attributes.type_id = typeId;
  attributes.carla_id = a.carlaId;
  if (a.type !== undefined) attributes.carla_type = a.type;
  if (a.uid !== undefined) attributes.carla_uid = a.uid;
  if (a.parent !== undefined) attributes.carla_parent = a.parent;
  if (!a.created) attributes.carla_created = false;
  const decl: ActorDecl = {
    id: a.id,
    kind: a.created ? actorKind(a.type, typeId, a.attributes) : 'other',
    attributes,
  };
  if (typeId) decl.sourceClass = typeId;
  const box = a.box;
  if (box) {
    const e = [box.extentX, box.extentY, box.extentZ];
    if (
      e.every((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0) &&
      e.some((v) => (v as number) > 0)
    ) {
      const [x, y, z] = e as number[];
      decl.extents = { length: 2 * x!, width: 2 * y!, height: 2 * z! };
      attributes.carla_box_offset = [box.x as number, box.y as number, box.z as number];
    }
  }
  return decl;
}

/** What a collision says of an actor: its blueprint and the letter show_recorder_collisions prints. */
function collisionParty(scan: Scan, id: number): { type: string; category: string } {
  if (id === NOT_AN_ACTOR) return { type: '', category: 'o' };
  const a = scan.actors.get(id);
  return { type: a?.typeId ?? '', category: QUERY_CATEGORY[a?.type ?? 0] ?? '?' };
}

/**
 * Imports a CARLA recorder file as a run: the header as metadata (map, date, version), every frame
 * (stream `carla_frame`), every actor with its presence from the creation and destruction events,
 * every record of every packet in the streams of carla-streams.ts, CARLA's collisions as `collision`
 * events, ScenarioRunner's criteria when given or beside the file, and the map's OpenDRIVE when given
 * (CARLA builds its maps from OpenDRIVE with y negated, so the road network and the poses agree).
 */
export async function importCarla(
  into: RunTarget,
  file: string,
  options: CarlaImportOptions = {},
): Promise<CarlaImportResult> {
  const warn = options.warn ?? (() => {});
  const carla = CarlaFile.open(file);
  try {
    const scan = scanRecording(carla, warn, options);
    const criteriaFile = options.criteria ?? besideCriteria(file);
    const criteria = criteriaFile ? readCriteriaFile(criteriaFile) : undefined;
    const road = options.xodr ? await readRoadNetworkFile(options.xodr) : undefined;
    for (const w of road?.warnings ?? []) warn(`${options.xodr}: ${w}`);
    const layout = layoutOf(scan.packets);
    const heroes = [...scan.actors.values()]
      .filter((a) => a.attributes.some((x) => x[1] === 'role_name' && x[2] === 'hero'))
      .map((a) => a.id);
    const derivedNote = 'derived from poses (central differences of consecutive frames)';
    const metadata: JsonObject = {
      source: 'carla',
      map: scan.header.map,
      town: scan.header.map,
      carla: {
        version: scan.header.version,
        magic: scan.header.magic,
        date: scan.header.date,
        map: scan.header.map,
        layout,
        additionalData: (scan.packets.get(PACKET.PlatformTime) ?? 0) > 0,
        packets: Object.fromEntries(
          [...scan.packets].sort((a, b) => a[0] - b[0]).map(([id, n]) => [packetName(id), n]),
        ),
      },
      recordedAt: new Date(scan.header.date * 1000).toISOString(),
      frames: scan.frames,
      hero: heroes,
      velocityCounts: { recorded: scan.kinematics, fromPoses: scan.positions - scan.kinematics },
      velocities:
        scan.kinematics === 0
          ? `${derivedNote}: the recording has no Kinematics (recorded without additional_data)`
          : scan.kinematics === scan.positions
            ? 'recorded (Kinematics packets)'
            : `recorded (Kinematics packets: ${scan.kinematics} of ${scan.positions} poses, vehicles and walkers) where present, else ${derivedNote}`,
    };
    if (criteria) metadata.criteria = { file: basename(criteriaFile!), ...criteria.summary };
    const rec = await into.beginRun({
      simulator: { name: 'carla' },
      description: basename(file).replace(/\.log$/i, ''),
      begin: scan.begin,
      metadata,
    });
    const actors = [...scan.actors.values()];
    await rec.declareActors(actors.map(actorDecl));
    const decls: StreamDecl[] = [{ name: FRAME_STREAM, fields: FRAME_FIELDS, metadata: { layout } }];
    for (const a of actors)
      for (const name of a.streams) {
        const spec = Object.values(ACTOR_STREAMS).find((s) => s.name === name)!;
        const decl: StreamDecl = { name, actor: a.id, fields: spec.fields };
        if (a.staticPose)
          decl.metadata = {
            pose: 'where CARLA created it (EventAdd): CARLA records no position for lights and signs',
          };
        decls.push(decl);
      }
    for (const name of scan.eventStreams) {
      const spec = Object.values(EVENT_STREAMS).find((s) => s.name === name)!;
      decls.push({ name, fields: spec.fields });
    }
    if (scan.collisions > 0) decls.push({ name: EVENTS_STREAM, fields: COLLISION_EVENT_FIELDS });
    if (criteria)
      decls.push({
        name: CRITERIA_STREAM,
        fields: CRITERIA_FIELDS,
        metadata: { file: basename(criteriaFile!) },
      });
    await rec.declareStreams(decls);
    for (const a of actors) if (a.intervals.length) await rec.setPresence(a.id, a.intervals);
    await emitFrames(carla, scan, rec, options);
    if (criteria) {
      await rec.attach({
        name: CRITERIA_ATTACHMENT,
        mediaType: 'application/json',
        data: criteria.bytes,
        metadata: { file: basename(criteriaFile!) },
      });
      await rec.appendMany([{ stream: CRITERIA_STREAM, samples: criteriaSamples(criteria, scan.lastT) }]);
    }
    if (road) await keepRoadNetwork(rec, road.network);
    const run = await rec.end(scan.lastComplete ? 'completed' : 'interrupted', { end: scan.lastT });
    if (!scan.lastComplete)
      warn(
        `the last frame (${scan.frames}) has no FrameEnd: the recording was cut at a packet boundary; the run ends interrupted`,
      );
    return { run, frames: scan.frames, actors: actors.length, layout, criteria: criteriaFile ?? null };
  } finally {
    carla.close();
  }
}

function besideCriteria(file: string): string | undefined {
  const beside = file.replace(/\.log$/i, '') + '_criteria.json';
  return beside !== file && existsSync(beside) ? beside : undefined;
}

export const COLLISION_EVENT_FIELDS = [
  { name: 'kind', type: 'string' as const },
  { name: 'actors', type: 'json' as const, description: 'the CARLA actors in the collision (their ids)' },
  { name: 'x', type: 'f64' as const, unit: 'm', description: "where: the first actor's position" },
  { name: 'y', type: 'f64' as const, unit: 'm' },
  {
    name: 'duration',
    type: 'f64' as const,
    unit: 's',
    description: 'how long the pair kept colliding, frame after frame',
  },
  { name: 'detail', type: 'string' as const },
  {
    name: 'source',
    type: 'string' as const,
    optional: true,
    description: 'who found the event: carla recorder',
  },
  {
    name: 'types',
    type: 'json' as const,
    optional: true,
    description: "the actors' blueprints ('' for no actor), as show_recorder_collisions prints them",
  },
  {
    name: 'categories',
    type: 'string' as const,
    optional: true,
    description:
      "show_recorder_collisions' type letters: o other, v vehicle, w walker, t traffic light, h hero, a any",
  },
  {
    name: 'collision',
    type: 'i64' as const,
    optional: true,
    description: "the recorder's id of the first collision record",
  },
  {
    name: 'ids',
    type: 'json' as const,
    optional: true,
    description: 'CARLA ids as recorded (4294967295: not an actor)',
  },
  { name: 'hero', type: 'json' as const, optional: true, description: 'IsActor1Hero, IsActor2Hero' },
];

/** Pass two: every frame's records as samples. */
async function emitFrames(
  carla: CarlaFile,
  scan: Scan,
  rec: RunSink,
  options: CarlaImportOptions,
): Promise<void> {
  let batch = new Map<string, Sample[]>();
  const push = (stream: string, s: Sample): void => {
    const list = batch.get(stream);
    if (list) list.push(s);
    else batch.set(stream, [s]);
  };
  // Poses, most of a recording, go to their `state` streams as columns: no object per record.
  const states = new StateRows(BATCH_FRAMES);
  const stateStream = ACTOR_STREAMS[PACKET.Position]!.name;
  // So do the records read as values (control, lights, walker, signal).
  const valueRows = new ValueRows(BATCH_FRAMES, (packet, actor) => {
    const { name, fields } = ACTOR_STREAMS[packet]!;
    const read = RECORD_CODECS[packet]!.values!.fields;
    return { stream: `${idOf(actor)}/${name}`, fields: read.map((n) => fields.find((f) => f.name === n)!) };
  });
  const flush = async (): Promise<void> => {
    const appends: StreamAppend[] = [...batch].map(([stream, samples]) => ({ stream, samples }));
    batch = new Map();
    const writes = states.take((actor, rows) => rec.appendColumns(`${actor}/${stateStream}`, rows));
    writes.push(...valueRows.take((stream, rows) => rec.appendColumns(stream, rows)));
    if (appends.length) writes.push(rec.appendMany(appends));
    await Promise.all(writes);
  };
  const actorIds = new Map<number, string>();
  const idOf = (carlaId: number): string => {
    let id = actorIds.get(carlaId);
    if (id === undefined) actorIds.set(carlaId, (id = String(carlaId)));
    return id;
  };
  // show_recorder_collisions: a pair is new in a frame when it did not collide in the one before.
  let before = new Map<string, CollisionEvent>();
  const collisions: CollisionEvent[] = [];
  // Each actor's last position (x, y): where its collisions are placed.
  const lastPose = new Map<number, Float64Array>();
  let n = 0;
  for (const frame of readFrames(carla)) {
    options.signal?.throwIfAborted();
    const t = frameTime(scan.begin, frame.start.elapsed);
    const step = frame.start.id;
    const fs: Sample = {
      t,
      step,
      frame: step,
      elapsed: frame.start.elapsed,
      duration: frame.start.durationThis,
      packets: frame.tokens.join(' '),
    };
    if (frame.platformTime !== undefined) fs.platformTime = frame.platformTime;
    if (frame.visualTime !== undefined) fs.visualTime = frame.visualTime;
    if (frame.frameCounter !== undefined) fs.frameCounter = frame.frameCounter;
    if (frame.raw.length) fs.raw = frame.raw;
    if (frame.unknown.length) fs.unknown = frame.unknown;
    push(FRAME_STREAM, fs);

    for (const pose of frame.poses)
      for (let i = 0; i < pose.count; i++) {
        if (pose.raw[i] !== undefined) continue;
        const carlaId = pose.actors[i]!;
        const at = POSE_WIDTH * i;
        states.add(idOf(carlaId), t, step, pose.values, at);
        let where = lastPose.get(carlaId);
        if (!where) lastPose.set(carlaId, (where = new Float64Array(2)));
        where[0] = pose.values[at]!;
        where[1] = pose.values[at + 1]!;
      }
    for (const records of frame.valued) {
      const width = records.reader.fields.length;
      for (let i = 0; i < records.count; i++)
        if (records.raw[i] === undefined)
          valueRows.add(records.packet, records.actors[i]!, t, step, records.values!, i * width);
    }
    for (const r of frame.actorRecords) {
      if (r.raw !== undefined) continue;
      // The record's fields become its sample (a frame's records are not read again once emitted):
      // a copy of each of a long recording's millions of records was most of the import's garbage.
      const s = r.fields as Sample;
      s.t = t;
      s.step = step;
      push(`${idOf(r.actor!)}/${ACTOR_STREAMS[r.packet]!.name}`, s);
    }
    const now = new Map<string, CollisionEvent>();
    for (const r of frame.eventRecords) {
      const s: Sample = { t, step, ...r.fields };
      if (r.actor !== undefined) s.actorId = String(r.actor);
      if (r.raw !== undefined) s.raw = r.raw;
      push(EVENT_STREAMS[r.packet]!.name, s);
      // A light or a sign: its place, as created, stands for its pose.
      if (r.packet === PACKET.EventAdd && r.raw === undefined && scan.actors.get(r.actor!)!.staticPose)
        push(`${r.actor}/state`, {
          t,
          step,
          x: s.x,
          y: s.y,
          z: s.z,
          roll: s.roll,
          pitch: s.pitch,
          yaw: s.yaw,
        });
      if (r.packet === PACKET.Collision && r.raw === undefined) {
        const id1 = r.fields.actor1 as number;
        const id2 = r.fields.actor2 as number;
        const key = `${id1} ${id2}`;
        const open = before.get(key);
        if (open) {
          open.duration += frame.start.durationThis > 0 ? frame.start.durationThis : 0;
          now.set(key, open);
          continue;
        }
        const [p1, p2] = [collisionParty(scan, id1), collisionParty(scan, id2)];
        const where = lastPose.get(id1) ?? lastPose.get(id2) ?? [0, 0];
        const actors = [id1, id2].filter((id) => id !== NOT_AN_ACTOR).map(String);
        const event: CollisionEvent = {
          t,
          step,
          kind: 'collision',
          actors,
          x: where[0]!,
          y: where[1]!,
          duration: frame.start.durationThis > 0 ? frame.start.durationThis : 0,
          detail: `${p1.type || 'no actor'} (${id1 === NOT_AN_ACTOR ? '-' : id1}) with ${p2.type || 'no actor'} (${id2 === NOT_AN_ACTOR ? '-' : id2}), as CARLA's recorder saw it`,
          source: CARLA_EVENT_SOURCE,
          types: [p1.type, p2.type],
          categories: `${p1.category} ${p2.category}`,
          collision: r.fields.collision as number,
          ids: [id1, id2],
          hero: [r.fields.hero1 as boolean, r.fields.hero2 as boolean],
        };
        collisions.push(event);
        now.set(key, event);
      }
    }
    before = now;
    if (++n % BATCH_FRAMES === 0) {
      await flush();
      options.onProgress?.(carla.size + frame.offset, 2 * carla.size);
    }
  }
  states.finishAll();
  for (const e of collisions) push(EVENTS_STREAM, e as unknown as Sample);
  await flush();
  options.onProgress?.(2 * carla.size, 2 * carla.size);
}

interface CollisionEvent {
  t: number;
  step: number;
  kind: 'collision';
  actors: string[];
  x: number;
  y: number;
  duration: number;
  detail: string;
  source: string;
  types: string[];
  categories: string;
  collision: number;
  ids: number[];
  hero: boolean[];
}
