import { describeValue, invalid } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { ActorDecl, RunInfo } from '../../model/run.js';
import { CONTROL_FIELDS, STATE_FIELDS, STATE_STREAM, WHEELS_FIELDS } from '../../model/standard-streams.js';
import type { RunSink, RunTarget } from '../../model/run-ports.js';
import type { Sample, StreamDecl } from '../../model/stream.js';
import { keepRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { readRoadNetwork } from '../../roadnet/read-roadnet.js';
import { array, doc, int32, int64, string, toCanonicalJson, type BsonDoc } from './bson-fields.js';
import { LANE_MARKS_KEY, type KeyValuePairs } from './duplicate-keys.js';
import { LANE_MARKS_ATTACHMENT, roadsToLaneMarks } from './lane-marks.js';
import { checkBatchRows, readEgoRow, readExtents, readGenericRow, readGhostRow } from './read-rows.js';
import {
  EXTENSION_FIELD,
  MAX_ROWS_PER_BATCH,
  parseExtension,
  stepsFromRuns,
  type ExtensionEntry,
} from './soda-layout.js';
import type { SodaDocument, SodaSource } from './soda-source.js';
import { pivotToCentre, type Triple } from './unreal-frame.js';

/** A dataset as its descriptor names it: G1/G2 `datasets` document, or G3 `dataset_<N>`'s own descriptor. */
export interface DatasetRef {
  id: number;
  collection: string;
  descriptor: SodaDocument;
  /** Where the actors are listed: `actors` (G1, G2) or `objects` (G3). */
  generation: 'G1/G2' | 'G3';
}

type Rows = 'ego' | 'ghost' | 'generic' | 'none';

interface Plan {
  name: string;
  rows: Rows;
  /** The simrec actor the rows belong to; undefined for run-level streams. */
  actor?: string;
  /** The stream generic rows go to. */
  stream?: string;
  pivotOffset?: Triple;
  /** Canonical stream name -> fields to keep (from simrec's extension). */
  present?: Map<string, Set<string>>;
  /** The steps of rows that have none (ghosts), by row index (from simrec's extension). */
  steps?: number[];
  index: number;
}

/** G3 names no actor type; its handlers are picked by the actor's native class. */
const G3_CLASS_TYPES: Record<string, string> = {
  SodaVehicle: 'ego',
  SodaWheeledVehicle: 'ego',
  GhostVehicle: 'vehicle',
  GhostPedestrian: 'pedestrian',
  OpenDriveTool: 'opendrive',
  TrackBuilder: 'trackbuilder',
};

const KIND_PATTERN = /^[a-z][a-z0-9_]*$/;

const STATE_DECL_FIELDS = [
  ...STATE_FIELDS,
  { name: 'renderT', type: 'i64' as const, unit: 'us', optional: true, description: "SODA.Sim's render_ts" },
  { name: 'route', type: 'string' as const, optional: true, description: "SODA.Sim's route name" },
];
const CONTROL_DECL_FIELDS = [
  ...CONTROL_FIELDS,
  { name: 'load', type: 'f64' as const, unit: '1', optional: true, description: 'engine load' },
  {
    name: 'gearState',
    type: 'i32' as const,
    optional: true,
    description: "SODA.Sim's inputs.gear as recorded: 0 neutral, 1 drive, 2 reverse, 3 park",
  },
];

export interface DatasetReadOptions {
  warn?: (message: string) => void;
}

interface Entry {
  name: string;
  type: string;
  class: string;
  description: BsonDoc;
  where: string;
  /** Path of its lane marks in the descriptor's raw sources. */
  path: string;
}

function entriesOf(ref: DatasetRef): Entry[] {
  const { doc: head, where } = ref.descriptor;
  const key = ref.generation === 'G3' ? 'objects' : 'actors';
  return array(head[key], `${where}.${key}`).map((value, i) => {
    const at = `${where}.${key}[${i}]`;
    const item = doc(value, at);
    const name = string(item.name, `${at}.name`);
    const cls = 'class' in item ? string(item.class, `${at}.class`) : '';
    if (ref.generation === 'G3') {
      const { name: _n, class: _c, ...description } = item;
      const type = name.includes('.') ? 'stream' : (G3_CLASS_TYPES[cls] ?? 'stream');
      return { name, type, class: cls, description, where: at, path: `${key}.${i}` };
    }
    return {
      name,
      type: string(item.type, `${at}.type`),
      class: cls,
      description: 'description' in item ? doc(item.description, `${at}.description`) : {},
      where: `${at}.description`,
      path: `${key}.${i}.description`,
    };
  });
}

/**
 * Imports one SODA.Sim dataset as a run. Actors are declared from the descriptor; batches are read in
 * the collection's order and put back in part order per actor; rows become samples in canonical units.
 * On any error the run begun is deleted, so a failed import leaves nothing behind.
 */
export async function readDataset(
  into: RunTarget,
  source: SodaSource,
  ref: DatasetRef,
  options: DatasetReadOptions = {},
): Promise<RunInfo> {
  const warn = options.warn ?? (() => {});
  const { doc: head, where } = ref.descriptor;
  const begin = int64(head.begin_ts, `${where}.begin_ts`);
  const version = string(head.unreal_soda_ver, `${where}.unreal_soda_ver`);
  const endTs = 'end_ts' in head ? int64(head.end_ts, `${where}.end_ts`) : undefined;
  const endReason = 'end_reason' in head ? string(head.end_reason, `${where}.end_reason`) : undefined;
  const extension = EXTENSION_FIELD in head ? parseExtension(head[EXTENSION_FIELD], where) : undefined;
  const extByName = new Map<string, ExtensionEntry>(extension?.entries.map((e) => [e.soda, e]) ?? []);
  const entries = entriesOf(ref);
  const plans = new Map<string, Plan>();
  const actors: ActorDecl[] = [];
  const streams: StreamDecl[] = [];
  const actorIds = new Set<string>();
  const addActor = (a: ActorDecl): void => {
    if (actorIds.has(a.id)) return;
    actorIds.add(a.id);
    actors.push(a);
  };
  let roadnetFrom: Entry | undefined;

  entries.forEach((entry, index) => {
    if (plans.has(entry.name))
      throw invalid(`${entry.where}: actor name ${describeValue(entry.name)} appears twice`);
    const rows: Rows =
      entry.type === 'ego'
        ? 'ego'
        : entry.type === 'vehicle' || entry.type === 'pedestrian'
          ? 'ghost'
          : entry.type === 'opendrive' || entry.type === 'trackbuilder'
            ? 'none'
            : 'generic';
    const plan: Plan = { name: entry.name, rows, index };
    if (rows === 'ego' || rows === 'ghost') {
      const extents = readExtents(entry.description, entry.where);
      if (extents) plan.pivotOffset = pivotToCentre(extents);
    }
    if (entry.type === 'opendrive') roadnetFrom = entry;
    const ext = extByName.get(entry.name);
    if (ext) {
      if (ext.actor) addActor(ext.actor);
      plan.present = new Map(ext.streams.map((s) => [s.decl.name, new Set(s.present)]));
      const stateSteps = ext.streams.find((s) => s.decl.name === STATE_STREAM)?.steps;
      if (rows === 'ghost' && stateSteps) plan.steps = stepsFromRuns(stateSteps);
      for (const s of ext.streams) streams.push(s.decl);
      if (rows === 'generic') {
        const decl = ext.streams[0]?.decl;
        if (decl) plan.stream = decl.name;
        if (decl?.actor) plan.actor = decl.actor;
      } else if (ext.actor) plan.actor = ext.actor.id;
      plans.set(entry.name, plan);
      return;
    }
    const { road_lanes_marks: _marks, xdor: _xdor, ...kept } = entry.description;
    const attributes: JsonObject = { soda: { type: entry.type, description: toCanonicalJson(kept) } };
    const decl: ActorDecl = { id: entry.name, kind: 'other', attributes };
    if (entry.class) decl.sourceClass = entry.class;
    const extents = readExtents(entry.description, entry.where);
    if (extents)
      decl.extents = {
        length: (extents.forward + extents.backward) / 100,
        width: (extents.left + extents.right) / 100,
        height: (extents.up + extents.down) / 100,
      };
    if (rows === 'ego' || rows === 'ghost') {
      decl.kind = entry.type;
      addActor(decl);
      plan.actor = entry.name;
      streams.push({ name: 'state', actor: entry.name, fields: STATE_DECL_FIELDS });
      if (rows === 'ego')
        streams.push(
          {
            name: 'control',
            actor: entry.name,
            fields: CONTROL_DECL_FIELDS,
          },
          { name: 'wheels', actor: entry.name, fields: WHEELS_FIELDS },
        );
    } else if (rows === 'none') {
      decl.kind = 'map';
      addActor(decl);
    } else if (entry.type === 'run_stream') {
      plan.stream = entry.name;
      streams.push({ name: entry.name, fields: [] });
    } else {
      // `Owner.Component` (G3 components, simrec's extra streams): a stream of the owner.
      const dot = entry.name.lastIndexOf('.');
      const owner = dot > 0 ? entry.name.slice(0, dot) : undefined;
      if (owner !== undefined && entries.some((e) => e.name === owner)) {
        plan.actor = owner;
        plan.stream = entry.name.slice(dot + 1);
      } else {
        decl.kind = KIND_PATTERN.test(entry.type) ? entry.type : 'other';
        addActor(decl);
        plan.actor = entry.name;
        plan.stream = 'data';
      }
      streams.push({ name: plan.stream, actor: plan.actor, fields: [] });
    }
    plans.set(entry.name, plan);
  });

  const metadata: JsonObject = extension?.run.metadata ?? {
    soda: { dataset: ref.id, collection: ref.collection, generation: ref.generation },
  };
  const recorder = await into.beginRun({
    simulator: extension?.run.simulator ?? { name: 'SODA.Sim', version },
    description: extension?.run.description ?? `SODA.Sim dataset ${ref.id}`,
    metadata,
    begin,
  });
  {
    await recorder.declareActors(actors);
    const declared = new Set(await recorder.declareStreams(streams));
    if (roadnetFrom) await attachRoads(recorder, roadnetFrom, ref.descriptor, warn);
    // SODA.Sim in synchronous mode stamps rows from the start of the run, not the epoch (format notes, 1.5).
    let base: number | undefined =
      (metadata.soda as JsonObject | undefined)?.timeBase === 'relative' ? begin : extension ? 0 : undefined;
    const expectedPart = new Map<string, number>();
    const waiting = new Map<string, Map<number, SodaDocument>>();
    const rowCounts = new Map<string, number>();
    let skippedEmpty = 0;

    const consume = async (item: SodaDocument, name: string): Promise<void> => {
      const plan = plans.get(name)!;
      const rows = checkBatchRows(item.doc.batch, `${item.where}.batch`, MAX_ROWS_PER_BATCH);
      const appends = new Map<string, Sample[]>();
      const push = (stream: string, sample: Sample): void => {
        const list = appends.get(stream);
        if (list) list.push(sample);
        else appends.set(stream, [sample]);
      };
      let index = rowCounts.get(name) ?? 0;
      for (let r = 0; r < rows.length; r++, index++) {
        const at = `${item.where}.batch[${r}]`;
        const row = doc(rows[r], at);
        if (plan.rows === 'none')
          throw invalid(`${at}: actor ${name} (${entries[plan.index]!.type}) records no rows`);
        if (plan.rows === 'generic') {
          const g = readGenericRow(row, at);
          if (g.ts === undefined && Object.keys(g.fields).length === 0) {
            skippedEmpty++;
            continue;
          }
          base ??= timeBase(g.ts ?? begin, begin);
          const sample: Sample = {
            ...keep(g.fields, plan.present?.get(plan.stream!)),
            t: g.ts === undefined ? begin : g.ts + base,
            step: g.step ?? index,
          };
          push(plan.actor ? `${plan.actor}/${plan.stream}` : plan.stream!, sample);
          continue;
        }
        const read =
          plan.rows === 'ego'
            ? readEgoRow(row, at, plan.pivotOffset)
            : readGhostRow(row, at, plan.pivotOffset);
        base ??= timeBase(read.ts, begin);
        const t = read.ts + base;
        const step = read.step ?? plan.steps?.[index] ?? index;
        for (const [stream, fields] of read.fields) {
          if (stream === 'state' && typeof fields.renderT === 'number') fields.renderT += base;
          const id = `${plan.actor}/${stream}`;
          if (!declared.has(id)) {
            // A G2 component met for the first time: its own stream, fields as they come.
            await recorder.declareStreams([{ name: stream, actor: plan.actor!, fields: [] }]);
            declared.add(id);
          }
          push(id, { ...keep(fields, plan.present?.get(stream)), t, step });
        }
      }
      rowCounts.set(name, index);
      try {
        await recorder.appendMany([...appends].map(([stream, samples]) => ({ stream, samples })));
      } catch (error) {
        throw invalid(`${item.where}: ${(error as Error).message}`);
      }
    };

    for await (const item of source.documents(ref.collection)) {
      if (ref.generation === 'G3' && !('batch' in item.doc)) continue;
      const name = string(item.doc.name, `${item.where}.name`);
      const part = int32(item.doc.part, `${item.where}.part`);
      if (!plans.has(name))
        throw invalid(`${item.where}.name: actor ${describeValue(name)} is not in ${where}'s actors`);
      const expected = expectedPart.get(name) ?? 0;
      if (part < expected) throw invalid(`${item.where}.part: part ${part} of ${name} appears twice`);
      if (part > expected) {
        // mongoexport writes natural order, which need not be insertion order: hold it until its turn.
        const held = waiting.get(name) ?? new Map<number, SodaDocument>();
        if (held.has(part)) throw invalid(`${item.where}.part: part ${part} of ${name} appears twice`);
        held.set(part, item);
        waiting.set(name, held);
        continue;
      }
      await consume(item, name);
      let next = part + 1;
      for (let held = waiting.get(name)?.get(next); held; held = waiting.get(name)?.get(next)) {
        waiting.get(name)!.delete(next);
        await consume(held, name);
        next++;
      }
      expectedPart.set(name, next);
    }
    for (const [name, held] of waiting)
      if (held.size)
        throw invalid(
          `${ref.collection}: actor ${name}: part ${expectedPart.get(name) ?? 0} is missing (parts ${[...held.keys()].sort((a, b) => a - b).join(', ')} wait for it)`,
        );
    if (skippedEmpty)
      warn(
        `${ref.collection}: ${skippedEmpty} empty rows skipped (SODA.Sim's DatasetRecorder writes its rows empty)`,
      );
    await recorder.flush();
    await leaveWhereBatchesEnd(recorder, endTs);
    if (endReason !== undefined && endTs !== undefined) return await recorder.end(endReason, { end: endTs });
    warn(`${where}: no end_ts/end_reason (the recording did not finish); the run ends as interrupted`);
    return await recorder.end('interrupted');
  }
}

/**
 * SODA.Sim writes an actor's rows while it is in the world, and nothing says when it leaves: an actor
 * whose batches end before the run does has left one sample interval (its stream's mean) after its
 * last row, when its next row would have come. Actors with rows to the end stay present.
 */
async function leaveWhereBatchesEnd(recorder: RunSink, runEnd: number | undefined): Promise<void> {
  const streams = (await recorder.streams()).filter((s) => s.actor !== null && s.end !== null);
  const end = runEnd ?? Math.max(...streams.map((s) => s.end!));
  const last = new Map<string, { end: number; interval: number | null }>();
  for (const s of streams) {
    const interval = s.samples > 1 ? Math.round((s.end! - s.begin!) / (s.samples - 1)) : null;
    const seen = last.get(s.actor!);
    if (!seen || s.end! > seen.end || (s.end === seen.end && interval !== null && seen.interval === null))
      last.set(s.actor!, { end: s.end!, interval });
  }
  const leaves: Promise<void>[] = [];
  for (const [actor, { end: lastRow, interval }] of last)
    if (interval !== null && interval > 0 && lastRow + interval <= end)
      leaves.push(recorder.leave(actor, lastRow + interval));
  await Promise.all(leaves);
}

/** Rows stamped near zero come from synchronous mode: seconds since sync start, not the epoch. */
const timeBase = (firstTs: number, begin: number): number => (firstTs < 1e15 && begin >= 1e15 ? begin : 0);

function keep<T extends Record<string, unknown>>(fields: T, present: Set<string> | undefined): T {
  if (!present) return fields;
  const out: Record<string, unknown> = {};
  for (const key in fields) if (present.has(key)) out[key] = fields[key];
  return out as T;
}

async function attachRoads(
  sink: RunSink,
  entry: Entry,
  descriptor: SodaDocument,
  warn: (message: string) => void,
): Promise<void> {
  const d = entry.description;
  let roads: KeyValuePairs[] | undefined = descriptor.laneMarks?.get(entry.path);
  if (!roads && LANE_MARKS_KEY in d)
    // No raw source to recover repeated keys from: the decoded document's last pair per road.
    roads = array(d[LANE_MARKS_KEY], `${entry.where}.${LANE_MARKS_KEY}`).map((r, i) =>
      Object.entries(doc(r, `${entry.where}.${LANE_MARKS_KEY}[${i}]`)),
    );
  if (roads) {
    const marks = roadsToLaneMarks(roads, `${entry.where}.${LANE_MARKS_KEY}`);
    await sink.attach({
      name: LANE_MARKS_ATTACHMENT,
      mediaType: 'application/json',
      data: Buffer.from(JSON.stringify(marks)),
      metadata: { marks: marks.length, roads: roads.length },
    });
  }
  if ('xdor' in d) {
    const text = string(d.xdor, `${entry.where}.xdor`);
    const read = readRoadNetwork(text, { file: `${entry.where}.xdor` });
    for (const w of read.warnings) warn(w);
    await keepRoadNetwork(sink, read.network);
  }
}
