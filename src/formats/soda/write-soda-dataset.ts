import { BSON } from 'mongodb';
import { invalid } from '../../model/errors.js';
import type { JsonObject, JsonValue } from '../../model/json.js';
import type { LaneMark } from '../../model/roadnet.js';
import type { ActorInfo } from '../../model/run.js';
import { presentOnly } from '../../model/presence.js';
import { CONTROL_STREAM, STATE_STREAM, WHEELS_STREAM } from '../../model/standard-streams.js';
import type { RunSource } from '../../model/run-ports.js';
import { readStreamSamples } from '../../model/sample-series.js';
import type { FieldType, Sample, StreamInfo } from '../../model/stream.js';
import { readRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import {
  fromCanonicalJson,
  fromPlainJson,
  toDouble,
  toInt32,
  toInt64,
  toVec3,
  type BsonDoc,
} from './bson-fields.js';
import { LANE_MARKS_ATTACHMENT, laneMarksToRoads } from './lane-marks.js';
import { readExtents } from './read-rows.js';
import {
  EXTENSION_FIELD,
  MAX_BATCH_BYTES,
  MAX_ROWS_PER_BATCH,
  sodaStateOfGear,
  stepRuns,
  WHEEL_POSITIONS,
  type ExtensionEntry,
  type SimrecExtension,
} from './soda-layout.js';
import { pivotToCentre, stateToUnreal, type Triple } from './unreal-frame.js';

/** How an entry of `actors[]` gets its rows. */
type RowKind = 'ego' | 'vehicle' | 'pedestrian' | 'generic' | 'none';

interface Entry {
  name: string;
  type: string;
  class: string;
  description: BsonDoc;
  rows: RowKind;
  actor?: ActorInfo;
  streams: StreamInfo[];
  pivotOffset?: Triple;
}

export interface DatasetWriteOptions {
  /** Write simrec's `simrec` field on the datasets document (default true); false gives the bare layout. */
  extension?: boolean;
  warn?: (message: string) => void;
}

/** A run as one SODA.Sim G1 dataset: its `datasets` document and its `dataset<ID>` batches. */
export interface DatasetWrite {
  id: number;
  /** The datasets document as SODA.Sim inserts it when recording begins. */
  head: BsonDoc;
  /** The batch documents, actor after actor, each at most 10,000 rows and well under 16 MB. */
  batches: AsyncIterable<BsonDoc>;
  /** What SODA.Sim `$set`s at the end (end_ts, end_reason) and simrec's extension; after batches(). */
  tail(): BsonDoc;
}

const SODA_TYPES_WITH_ROWS = new Set(['ego', 'vehicle', 'pedestrian', 'opendrive']);

interface SodaAttributes {
  type?: string;
  description?: JsonValue;
}
const sodaAttributes = (actor: ActorInfo | undefined): SodaAttributes =>
  (actor?.attributes.soda ?? {}) as SodaAttributes;

function extentsDoc(actor: ActorInfo): BsonDoc | undefined {
  if (!actor.extents) return undefined;
  const { length, width, height } = actor.extents;
  return {
    forward: toDouble(length * 50),
    backward: toDouble(length * 50),
    left: toDouble(width * 50),
    right: toDouble(width * 50),
    up: toDouble(height * 50),
    down: toDouble(height * 50),
  };
}

function description(actor: ActorInfo | undefined, rows: RowKind): BsonDoc {
  const kept = sodaAttributes(actor).description;
  if (kept !== undefined) return fromCanonicalJson(kept) as BsonDoc;
  if (!actor) return {};
  const out: BsonDoc = {};
  const extents = extentsDoc(actor);
  if (extents) out.extents = extents;
  if (rows === 'ego') {
    const num = (key: string): number =>
      typeof actor.attributes[key] === 'number' ? actor.attributes[key] : 0;
    out.track_width = toDouble(num('trackWidth') * 100);
    out.wheel_base_width = toDouble(num('wheelBase') * 100);
    out.mass = toDouble(num('mass'));
    out.wheels = [];
  }
  return out;
}

/** The pivot offset of an actor whose SODA.Sim description says where its box sits. */
function pivotOffsetOf(desc: BsonDoc, actor: string): Triple | undefined {
  const extents = readExtents(desc, `actor ${actor} attributes.soda.description`);
  return extents && pivotToCentre(extents);
}

/** Plans the `actors[]` entries: SODA.Sim's own types where the streams fit, generic entries otherwise. */
function planEntries(actors: ActorInfo[], streams: StreamInfo[], hasRoadNetwork: boolean): Entry[] {
  const entries: Entry[] = [];
  const generic = (name: string, type: string, s: StreamInfo, actor?: ActorInfo): Entry => {
    const e: Entry = {
      name,
      type,
      class: actor?.sourceClass ?? '',
      description: {},
      rows: 'generic',
      streams: [s],
    };
    if (actor) e.actor = actor;
    return e;
  };
  let opendrive = false;
  for (const actor of actors) {
    const own = streams.filter((s) => s.actor === actor.id);
    const byName = new Map(own.map((s) => [s.name, s]));
    const soda = sodaAttributes(actor);
    let core: StreamInfo[] = [];
    let rows: RowKind = 'none';
    let type = soda.type ?? actor.kind;
    const state = byName.get(STATE_STREAM);
    if (state) {
      rows = actor.kind === 'ego' ? 'ego' : actor.kind === 'pedestrian' ? 'pedestrian' : 'vehicle';
      type = rows;
      core = [state];
      if (rows === 'ego')
        for (const name of [CONTROL_STREAM, WHEELS_STREAM]) {
          const s = byName.get(name);
          if (s) core.push(s);
        }
    } else if (type === 'opendrive') opendrive = true;
    else if (SODA_TYPES_WITH_ROWS.has(type)) type = 'stream';
    const desc = description(actor, rows);
    const rest = own.filter((s) => !core.includes(s));
    if (core.length > 0 || rest.length === 0 || type === 'opendrive') {
      const entry: Entry = {
        name: actor.id,
        type,
        class: actor.sourceClass ?? '',
        description: desc,
        rows,
        actor,
        streams: core,
      };
      const offset = pivotOffsetOf(desc, actor.id);
      if (offset) entry.pivotOffset = offset;
      entries.push(entry);
    }
    const genericType = SODA_TYPES_WITH_ROWS.has(actor.kind) ? 'stream' : actor.kind;
    for (const s of rest) entries.push(generic(`${actor.id}.${s.name}`, genericType, s, actor));
  }
  for (const s of streams.filter((s) => s.actor === null)) entries.push(generic(s.name, 'run_stream', s));
  if (hasRoadNetwork && !opendrive)
    entries.push({
      name: 'opendrive',
      type: 'opendrive',
      class: 'OpenDriveTool',
      description: {},
      rows: 'none',
      streams: [],
    });
  return entries;
}

/** A value of a declared field type as the BSON type that says the same. */
function typedValue(type: FieldType | undefined, value: unknown): unknown {
  if (typeof value === 'number')
    switch (type) {
      case 'i32':
        return toInt32(value);
      case 'i64':
        return toInt64(value);
      default:
        return toDouble(value);
    }
  if (type === 'vec' && Array.isArray(value)) return value.map((v) => toDouble(v as number));
  return fromPlainJson(value as JsonValue);
}

function wheelsRow(wheels: unknown): BsonDoc[] {
  if (!Array.isArray(wheels)) return [];
  return wheels.map((w: Record<string, unknown>, i) => {
    const n = (key: string): number => (typeof w?.[key] === 'number' ? w[key] : 0);
    const position = WHEEL_POSITIONS.indexOf(w?.position as (typeof WHEEL_POSITIONS)[number]);
    return {
      '4wd_ind': toInt32(position >= 0 ? position : i),
      ang_vel: toDouble(n('angularVelocity')),
      req_torq: toDouble(n('torque')),
      req_brake_torq: toDouble(n('brakeTorque')),
      // Canonical steer turns counter-clockwise seen from above; Unreal's clockwise.
      steer: toDouble(-n('steer')),
      sus: toDouble(n('suspension') * 100),
      long_slip: toDouble(n('slipLong')),
      lat_slip: toDouble(n('slipLat')),
    };
  });
}

/** Prepares a run's export as SODA.Sim dataset `id`. The run's samples are read as batches are asked for. */
export async function writeDataset(
  source: RunSource,
  id: number,
  options: DatasetWriteOptions = {},
): Promise<DatasetWrite> {
  const warn = options.warn ?? (() => {});
  const { run } = source;
  const [actors, streams, roadnet, sodaMarks] = await Promise.all([
    source.actors(),
    source.streams(),
    readRoadNetwork(source, run.id),
    source.attachment(LANE_MARKS_ATTACHMENT),
  ]);
  const entries = planEntries(actors, streams, roadnet !== undefined);
  const presenceOf = new Map(actors.map((a) => [a.id, a.presence] as const));
  for (const entry of entries)
    if (entry.type === 'opendrive') {
      const marks: LaneMark[] = sodaMarks
        ? (JSON.parse(Buffer.from(sodaMarks.data).toString('utf8')) as LaneMark[])
        : (roadnet?.laneMarks ?? []);
      entry.description.road_lanes_marks = laneMarksToRoads(marks);
      if (roadnet?.source.format === 'opendrive') entry.description.xdor = roadnet.source.text;
    }
  const attachments = await source.attachments();
  const left = attachments.filter((a) => !a.name.startsWith('roadnet/') && a.name !== LANE_MARKS_ATTACHMENT);
  if (left.length) warn(`${left.length} attachments have no place in SODA.Sim's layout and are not exported`);

  const soda = (run.metadata.soda ?? {}) as JsonObject;
  // SODA.Sim in synchronous mode stamps rows from the start of the run, not the epoch; such a run
  // was imported with `timeBase: relative` and goes back the same way.
  const base = soda.timeBase === 'relative' ? run.begin : 0;
  const head: BsonDoc = {
    _id: toInt64(id),
    begin_ts: toInt64(run.begin),
    unreal_soda_ver: run.simulator.version ?? '',
    actors: entries.map((e) => ({ name: e.name, type: e.type, class: e.class, description: e.description })),
  };
  const extensionEntries: ExtensionEntry[] = entries.map((e) => {
    const x: ExtensionEntry = {
      soda: e.name,
      streams: e.streams.map((s) => {
        const decl: ExtensionEntry['streams'][number]['decl'] = {
          name: s.name,
          fields: s.fields,
          metadata: s.metadata,
        };
        if (s.actor !== null) decl.actor = s.actor;
        if (s.rateHz !== undefined) decl.rateHz = s.rateHz;
        return { decl, present: [] };
      }),
    };
    if (e.actor) x.actor = e.actor;
    return x;
  });
  const dropped = new Map<string, Set<string>>();
  const drop = (stream: string, key: string): void => {
    const set = dropped.get(stream) ?? new Set<string>();
    set.add(key);
    dropped.set(stream, set);
  };
  const gearsNarrowed = new Set<string>();
  const narrowGear = (stream: string): void => void gearsNarrowed.add(stream);
  let batchesDone = false;

  async function* batches(): AsyncIterable<BsonDoc> {
    for (const [index, entry] of entries.entries()) {
      const x = extensionEntries[index]!;
      let part = 0;
      let rows: BsonDoc[] = [];
      let bytes = 0;
      const batch = (): BsonDoc => {
        const doc = { name: entry.name, part: toInt32(part++), batch: rows };
        rows = [];
        bytes = 0;
        return doc;
      };
      // An actor's rows only where it is present (SODA.Sim writes an actor while it is in the world).
      const samples = await Promise.all(
        entry.streams.map(async (s) =>
          presentOnly(await readStreamSamples(source, s.id), presenceOf.get(s.actor ?? '')),
        ),
      );
      samples.forEach((list, k) => {
        const present = new Set<string>();
        for (const s of list) for (const key in s) if (key !== 't' && key !== 'step') present.add(key);
        x.streams[k]!.present = [...present];
        const steps = stepRuns(list.map((sample) => sample.step));
        if (steps) x.streams[k]!.steps = steps;
      });
      let rowIndex = 0;
      for (const row of entryRows(entry, samples, base, drop, narrowGear)) {
        rowIndex++;
        const size = BSON.calculateObjectSize(row);
        // Only a row with a huge unknown field gets here; MongoDB would refuse its batch document.
        if (size > MAX_BATCH_BYTES)
          throw invalid(
            `${entry.name} row ${rowIndex}: ${size} bytes; a SODA.Sim batch document must stay under ${MAX_BATCH_BYTES} bytes (MongoDB's limit is 16 MiB)`,
          );
        if (rows.length === MAX_ROWS_PER_BATCH || (rows.length > 0 && bytes + size > MAX_BATCH_BYTES))
          yield batch();
        rows.push(row);
        bytes += size;
      }
      if (rows.length > 0 || part === 0) yield batch();
    }
    // A required field left out is declared optional: the import would otherwise declare a field
    // that no row carries as required, and refuse the dataset.
    for (const [index, entry] of entries.entries())
      entry.streams.forEach((stream, k) => {
        const gone = dropped.get(stream.id);
        const { decl } = extensionEntries[index]!.streams[k]!;
        if (gone) decl.fields = decl.fields.map((f) => (gone.has(f.name) ? { ...f, optional: true } : f));
      });
    for (const [stream, keys] of dropped)
      warn(`${stream}: fields ${[...keys].join(', ')} have no place in a SODA.Sim row and are not exported`);
    for (const stream of gearsNarrowed)
      warn(
        `${stream}: gears 2 and above are written as SODA.Sim's gear state drive (it records neutral, drive, reverse or park, not the gear engaged)`,
      );
    batchesDone = true;
  }

  function tail(): BsonDoc {
    if (!batchesDone) throw new Error('writeDataset: tail() asked for before every batch was written');
    const out: BsonDoc = {};
    if (run.end !== null) out.end_ts = toInt64(run.end);
    if (run.endReason !== null) out.end_reason = run.endReason;
    if (options.extension !== false) {
      const ext: SimrecExtension = {
        version: 1,
        run: { simulator: run.simulator, description: run.description, metadata: run.metadata },
        entries: extensionEntries,
      };
      out[EXTENSION_FIELD] = JSON.stringify(ext);
    }
    return out;
  }

  return { id, head, batches: batches(), tail };
}

/** The pose and motion SODA.Sim's ego and ghost rows share. */
const MOTION_KEYS = [
  'x',
  'y',
  'z',
  'roll',
  'pitch',
  'yaw',
  'speed',
  'vx',
  'vy',
  'vz',
  'accel',
  'ax',
  'ay',
  'az',
];
const EGO_STATE_KEYS = new Set([...MOTION_KEYS, 'wx', 'wy', 'wz', 'renderT']);
const GHOST_STATE_KEYS = new Set([...MOTION_KEYS, 'route']);
const CONTROL_KEYS = new Set(['throttle', 'brake', 'steer', 'gear', 'gearState', 'load']);

/** The rows of one entry, in time order. */
function* entryRows(
  entry: Entry,
  samples: Sample[][],
  base: number,
  drop: (stream: string, key: string) => void,
  narrowGear: (stream: string) => void,
): Iterable<BsonDoc> {
  const checkKeys = (s: Sample, keys: Set<string>, stream: StreamInfo): void => {
    for (const key in s) if (key !== 't' && key !== 'step' && !keys.has(key)) drop(stream.id, key);
  };
  if (entry.rows === 'generic') {
    const stream = entry.streams[0]!;
    const types = new Map<string, FieldType>([
      ...stream.fields.map((f) => [f.name, f.type] as const),
      ...stream.extraFields.map((f) => [f.name, f.type] as const),
    ]);
    for (const s of samples[0] ?? []) {
      const row: BsonDoc = { ts: toInt64(s.t - base), step: toInt32(s.step) };
      for (const key in s)
        if (key !== 't' && key !== 'step' && s[key] !== undefined)
          row[key] = typedValue(types.get(key), s[key]);
      yield row;
    }
    return;
  }
  if (entry.rows === 'none') return;
  const [states = [], controls = [], wheels = []] = samples;
  const byT = (list: Sample[]): Map<number, Sample> => new Map(list.map((s) => [s.t, s]));
  const controlAt = entry.rows === 'ego' ? byT(controls) : new Map<number, Sample>();
  const wheelsAt = entry.rows === 'ego' ? byT(wheels) : new Map<number, Sample>();
  const stateTimes = new Set(states.map((s) => s.t));
  for (const [k, list] of [controls, wheels].entries()) {
    const orphans = list.filter((s) => !stateTimes.has(s.t)).length;
    if (orphans) drop(entry.streams[k + 1]!.id, `${orphans} samples at times without a state sample`);
  }
  for (const s of states) {
    const u = stateToUnreal(s, entry.pivotOffset);
    const ts = toInt64(s.t - base);
    if (entry.rows === 'ego') {
      checkKeys(s, EGO_STATE_KEYS, entry.streams[0]!);
      const row: BsonDoc = {
        sim_ts: ts,
        render_ts: toInt64((typeof s.renderT === 'number' ? s.renderT : s.t) - base),
        step: toInt32(s.step),
        loc: toVec3(u.loc),
        rot: toVec3([u.rot.pitch, u.rot.yaw, u.rot.roll]),
        vel: toVec3(u.vel),
        acc: toVec3(u.acc),
        ang_vel: toVec3(u.angVel),
      };
      const c = controlAt.get(s.t);
      if (c) {
        checkKeys(c, CONTROL_KEYS, entry.streams[1]!);
        const n = (key: string): number => (typeof c[key] === 'number' ? c[key] : 0);
        const given = (key: string): number | undefined => (typeof c[key] === 'number' ? n(key) : undefined);
        const gear = given('gear');
        if (gear !== undefined && gear > 1 && given('gearState') === undefined)
          narrowGear(entry.streams[1]!.id);
        row.load = toDouble(n('load'));
        row.inputs = {
          break: toDouble(n('brake')),
          steer: toDouble(n('steer')),
          throttle: toDouble(n('throttle')),
          gear: toInt32(sodaStateOfGear(gear, given('gearState'))),
        };
      }
      const w = wheelsAt.get(s.t);
      if (w) row.wheels = wheelsRow(w.wheels);
      yield row;
    } else {
      checkKeys(s, GHOST_STATE_KEYS, entry.streams[0]!);
      const row: BsonDoc = {
        ts,
        loc: toVec3(u.loc),
        rot: toVec3([u.rot.pitch, u.rot.yaw, u.rot.roll]),
        vel: toVec3([u.vel[0], 0, 0]),
      };
      if (entry.rows === 'vehicle') row.acc = toVec3([u.acc[0], 0, 0]);
      row.route = { name: typeof s.route === 'string' ? s.route : '' };
      yield row;
    }
  }
}
