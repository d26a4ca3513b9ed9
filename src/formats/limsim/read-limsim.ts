import { invalid, SimrecError } from '../../model/errors.js';
import type { JsonObject, JsonValue } from '../../model/json.js';
import type { ActorDecl, RunInfo } from '../../model/run.js';
import type { RunSink, RunTarget } from '../../model/run-ports.js';
import type { StreamAppend } from '../../model/store-port.js';
import type { FieldDecl, FieldType, Sample } from '../../model/stream.js';
import { keepRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { MAX_SHAPE_BYTES, type LimSimNetworkTables } from './limsim-network-rows.js';
import { asReadError, LimSimDatabase, variantName, type ColumnInfo, type Row } from './limsim-database.js';
import { parseNetBoundary, parseRoute, parseStartTime } from './limsim-encodings.js';
import { appendLimSimFrames, DURABLE_ROWS, repeatsWarning } from './read-limsim-frames.js';
import { networkFromLimSimRows, type LaneClasses } from './limsim-network-tables.js';
import type { LimSimVariant } from './limsim-schema.js';
import {
  FRAME_HZ,
  FRAME_MICROS,
  LIMSIM_EVALUATION_STREAM,
  LIMSIM_QA_STREAM,
  LIMSIM_STATE_FIELDS,
  SIGNAL_FIELDS,
  SIGNAL_STREAM,
} from './limsim-streams.js';

export interface LimSimImportOptions {
  warn?: (message: string) => void;
  /** Rows read so far of all rows to read. */
  onProgress?: (done: number, total: number) => void;
}

export interface LimSimImportResult {
  run: RunInfo;
  variant: LimSimVariant;
  /** Rows read, by table. */
  rows: Record<string, number>;
}

/** LimSim gives no height; this is what simrec's SUMO recorder assumes for a car. */
const ASSUMED_HEIGHT = 1.5;

const str = (v: unknown): string => String(v);
const num = (v: unknown): number => v as number;
const opt = (v: unknown): JsonValue => (v === undefined ? null : (v as JsonValue));

/**
 * Imports a LimSim recording (master or LimSim++) as a run: vehicles and their per-frame states, the
 * traffic lights' states, LimSim's stored evaluation, the road network rebuilt from its tables, and
 * simINFO as run metadata. Frame f is at run begin + f x 0.1 s, where the run begins at simINFO's
 * startTime (LimSim's clock at frame 0), so a recording that starts at frame 697 starts 69.7 s into
 * its run and `step` keeps LimSim's frame number.
 */
export async function importLimSim(
  into: RunTarget,
  file: string,
  options: LimSimImportOptions = {},
): Promise<LimSimImportResult> {
  const warn = options.warn ?? (() => {});
  const db = LimSimDatabase.open(file);
  try {
    const sim = readSimInfo(db);
    const vehicles = db.all('vehicleINFO');
    const vehicleIds = new Set(vehicles.map((v) => str(v.vid)));
    precheckFrames(db, vehicleIds);
    const ego = sim.egoID !== '' && vehicleIds.has(sim.egoID) ? sim.egoID : undefined;
    if (sim.egoID !== '' && !ego)
      warn(`simINFO.egoID ${JSON.stringify(sim.egoID)}: no such vehicle in vehicleINFO`);
    const network = readNetwork(db, sim.netBoundary, warn);
    const actors: ActorDecl[] = vehicles.map((v) => vehicleActor(v, ego));
    actors.push(...readObstacles(db, new Set(actors.map((a) => a.id))));
    const lightIds = [
      ...new Set(
        (db.db.prepare('SELECT DISTINCT id FROM trafficLightStates ORDER BY id').all() as Row[]).map((r) =>
          str(r.id),
        ),
      ),
    ];
    const takenIds = new Set(actors.map((a) => a.id));
    const clash = lightIds.find((id) => takenIds.has(id));
    if (clash !== undefined)
      throw invalid(
        `${file}: trafficLightStates id ${JSON.stringify(clash)} is also a vehicle or obstacle id`,
      );
    actors.push(...lightIds.map((id) => ({ id, kind: 'traffic_light' })));

    const frameTables = [
      'frameINFO',
      'trafficLightStates',
      'evaluationINFO',
      ...(db.has('QAINFO') ? ['QAINFO'] : []),
    ];
    const total = frameTables.reduce((n, t) => n + db.count(t), 0);
    const rows: Record<string, number> = {};
    let done = 0;
    const progress = (table: string, n: number): void => {
      rows[table] = (rows[table] ?? 0) + n;
      done += n;
      options.onProgress?.(done, total);
    };

    const rec = await into.beginRun({
      simulator: { name: variantName(db.variant) },
      description: sim.note ?? '',
      begin: sim.begin,
      metadata: sim.metadata,
    });
    {
      await rec.declareActors(actors);
      await rec.declareStreams([
        ...vehicles.map((v) => ({
          name: 'state',
          actor: str(v.vid),
          fields: LIMSIM_STATE_FIELDS,
          rateHz: FRAME_HZ,
        })),
        ...lightIds.map((id) => ({
          name: SIGNAL_STREAM,
          actor: id,
          fields: SIGNAL_FIELDS,
          rateHz: FRAME_HZ,
        })),
      ]);
      const at = (frame: number): number => sim.begin + Math.round(frame * FRAME_MICROS);
      let last = sim.begin;
      const pump = async (
        table: string,
        toSample: (row: Row) => { stream: string; sample: Sample },
        orderBy: string,
        columns?: string[],
        /** The row's key, for tables of one row per (frame, actor): a repeat is warned of and skipped. */
        keyOf?: (row: Row) => string,
      ): Promise<void> => {
        let batch = new Map<string, Sample[]>();
        let count = 0;
        let previousKey: string | undefined;
        let repeats = 0;
        let firstRepeat = '';
        const flush = async (): Promise<void> => {
          const appends: StreamAppend[] = [...batch].map(([stream, samples]) => ({ stream, samples }));
          batch = new Map();
          if (appends.length) await rec.appendMany(appends);
          progress(table, count);
          count = 0;
        };
        for (const row of db.rows(table, { orderBy, ...(columns ? { columns } : {}) })) {
          if (keyOf) {
            // Rows come in the key's order: a repeat follows the row it repeats.
            const key = keyOf(row);
            if (key === previousKey) {
              if (repeats++ === 0) firstRepeat = key;
              count++; // read, for the progress
              continue;
            }
            previousKey = key;
          }
          const { stream, sample } = toSample(row);
          if (sample.t > last) last = sample.t;
          const list = batch.get(stream);
          if (list) list.push(sample);
          else batch.set(stream, [sample]);
          if (++count >= DURABLE_ROWS) await flush();
        }
        await flush();
        if (repeats > 0) warn(repeatsWarning(table, orderBy, repeats, firstRepeat));
      };

      const frames = await appendLimSimFrames(db, rec, at, (n) => progress('frameINFO', n), warn);
      if (frames.last !== null && frames.last > last) last = frames.last;
      for (const [vid, intervals] of frames.presence) await rec.setPresence(vid, intervals);
      await pump(
        'trafficLightStates',
        (r) => {
          const frame = num(r.frame);
          const sample: Sample = { t: at(frame), step: frame };
          if (r.currPhase !== null) sample.state = str(r.currPhase);
          if (r.nextPhase !== undefined && r.nextPhase !== null) sample.nextPhase = str(r.nextPhase);
          if (r.switchTime !== undefined && r.switchTime !== null) sample.switchTime = num(r.switchTime);
          return { stream: `${str(r.id)}/${SIGNAL_STREAM}`, sample };
        },
        'frame, id',
        undefined,
        (r) => `frame ${String(r.frame)}, id ${JSON.stringify(str(r.id))}`,
      );
      for (const [table, name] of [
        ['evaluationINFO', LIMSIM_EVALUATION_STREAM],
        ['QAINFO', LIMSIM_QA_STREAM],
      ] as const) {
        if (!db.has(table)) continue;
        const fields = frameTableFields(db.columnsOf(table), warn, table);
        const stream = (
          await rec.declareStreams([
            { name, ...(ego ? { actor: ego } : {}), fields, metadata: { limsimTable: table } },
          ])
        )[0]!;
        await pump(
          table,
          (r) => {
            const frame = num(r.frame);
            const sample: Sample = { t: at(frame), step: Math.round(frame) };
            for (const f of fields)
              if (r[f.name] !== null && r[f.name] !== undefined) sample[f.name] = r[f.name];
            return { stream, sample };
          },
          'frame',
          ['frame', ...fields.map((f) => f.name)],
        );
      }
      if (db.has('imageINFO')) rows.imageINFO = await attachImages(db, rec, at);
      if (network) await keepRoadNetwork(rec, network);
      for (const t of [
        'vehicleINFO',
        'edgeINFO',
        'laneINFO',
        'junctionLaneINFO',
        'junctionINFO',
        'connectionINFO',
      ])
        rows[t] = db.count(t);
      const run = await rec.end('completed', { end: last });
      return { run, variant: db.variant, rows };
    }
  } catch (error) {
    throw asReadError(file, error);
  } finally {
    db.close();
  }
}

interface SimInfo {
  begin: number;
  egoID: string;
  note: string | null;
  netBoundary?: [number, number, number, number];
  metadata: JsonObject;
}

function readSimInfo(db: LimSimDatabase): SimInfo {
  const rows = db.all('simINFO', { columns: db.columnsOf('simINFO').map((c) => c.name) });
  const row = rows[0];
  if (!row) throw invalid(`${db.file}: simINFO has no row; LimSim writes one when the simulation starts`);
  const timeColumn = db.variant === 'limsim' ? 'startTime' : 'excuteTime';
  const time = row[timeColumn];
  if (typeof time !== 'string')
    throw invalid(`${db.file}: simINFO row 1, column ${timeColumn}: expected a time, got ${String(time)}`);
  const begin = parseStartTime(time, `${db.file}: simINFO row 1, column ${timeColumn}`);
  const netBoundary =
    typeof row.netBoundary === 'string' && row.netBoundary !== ''
      ? parseNetBoundary(row.netBoundary, `${db.file}: simINFO row 1, column netBoundary`)
      : undefined;
  const metadata: JsonObject = { source: 'limsim', variant: db.variant, startTime: time };
  const egoID = row.egoID === null || row.egoID === undefined ? '' : String(row.egoID);
  metadata.ego = egoID;
  // Ego tracking leaves localPos and radius NULL; a fixed scene sets them (its area's centre and radius).
  if (typeof row.localPosx === 'number' && typeof row.localPosy === 'number')
    metadata.localPos = [row.localPosx, row.localPosy];
  if (typeof row.radius === 'number') metadata.radius = row.radius;
  if (row.description !== undefined) metadata.description = opt(row.description);
  if (row.note !== undefined) metadata.note = opt(row.note);
  if (netBoundary) metadata.netBoundary = netBoundary;
  // LimSim++'s route scores: one small row per ego.
  if (db.has('resultINFO'))
    metadata.limsimResult = (db.db.prepare('SELECT * FROM resultINFO').all() as JsonObject[]).map((r) => ({
      ...r,
    }));
  const note = typeof row.note === 'string' ? row.note : null;
  return { begin, egoID, note, metadata, ...(netBoundary ? { netBoundary } : {}) };
}

/**
 * The whole-table checks, before a run is begun: a frame row that names a vehicle vehicleINFO does
 * not have would otherwise fail halfway through the import.
 */
function precheckFrames(db: LimSimDatabase, vehicles: Set<string>): void {
  // The ids alone (plucked: no object per row), then the first row of one that is not a vehicle.
  for (const vid of db.db
    .prepare('SELECT vid FROM frameINFO WHERE vid IS NOT NULL')
    .pluck()
    .iterate() as Iterable<unknown>) {
    if (vehicles.has(String(vid))) continue;
    const row = db.db
      .prepare('SELECT rowid AS r, frame FROM frameINFO WHERE vid = ? ORDER BY rowid LIMIT 1')
      .get(vid) as Row;
    throw invalid(
      `${db.file}: frameINFO row ${String(row.r)} (frame=${String(row.frame)}), column vid: vehicle ${JSON.stringify(String(vid))} is not in vehicleINFO`,
    );
  }
}

function vehicleActor(v: Row, ego: string | undefined): ActorDecl {
  const id = str(v.vid);
  return {
    id,
    kind: id === ego ? 'ego' : 'vehicle',
    sourceClass: str(v.vTypeID),
    extents: { length: num(v.length), width: num(v.width), height: ASSUMED_HEIGHT },
    attributes: {
      vType: str(v.vTypeID),
      maxAccel: opt(v.maxAccel),
      maxDecel: opt(v.maxDecel),
      maxSpeed: opt(v.maxSpeed),
      route: parseRoute(str(v.routes)),
    },
  };
}

/** LimSim creates the obstacle tables but never fills them; rows someone did put there are kept as static actors. */
function readObstacles(db: LimSimDatabase, taken: Set<string>): ActorDecl[] {
  const actors: ActorDecl[] = [];
  for (const [table, shape] of [
    ['circleObsINFO', 'circle'],
    ['rectangleObsINFO', 'rectangle'],
  ] as const) {
    for (const row of db.rows(table)) {
      const id = str(row.id);
      if (taken.has(id)) throw invalid(`${db.file}: ${table} id ${JSON.stringify(id)} is also a vehicle id`);
      taken.add(id);
      const { id: _id, ...attributes } = row;
      actors.push({
        id,
        kind: 'static',
        sourceClass: `limsim.${shape}Obs`,
        attributes: attributes as JsonObject,
      });
    }
  }
  return actors;
}

function readNetwork(
  db: LimSimDatabase,
  netBoundary: [number, number, number, number] | undefined,
  warn: (m: string) => void,
): ReturnType<typeof networkFromLimSimRows>['network'] | undefined {
  if (db.count('laneINFO') === 0) {
    warn(`${db.file}: laneINFO is empty; the run has no road network`);
    return undefined;
  }
  // A shape longer than MAX_SHAPE_BYTES is not read (a lane of 40 M points, 320 MB of text, took the
  // import to 5 GB): the lane is left out, the junction drawn without its outline, each named.
  const tooLong = new Map<string, Map<string, number>>();
  const shapeOf = (table: 'laneINFO' | 'junctionINFO'): Record<string, string> => {
    const long = new Map<string, number>();
    for (const r of db.db
      .prepare(`SELECT id, octet_length(rawShape) AS bytes FROM "${table}" WHERE octet_length(rawShape) > ?`)
      .all(MAX_SHAPE_BYTES) as { id: unknown; bytes: number }[])
      long.set(String(r.id), r.bytes);
    tooLong.set(table, long);
    return {
      rawShape: `CASE WHEN octet_length("rawShape") > ${MAX_SHAPE_BYTES} THEN '' ELSE "rawShape" END`,
    };
  };
  const tables = {
    edgeINFO: db.all('edgeINFO'),
    laneINFO: db.all('laneINFO', { expressions: shapeOf('laneINFO') }),
    junctionLaneINFO: db.all('junctionLaneINFO').map((r) => ({ tlLogicID: null, ...r })),
    junctionINFO: db.has('junctionINFO')
      ? db.all('junctionINFO', { expressions: shapeOf('junctionINFO') })
      : [],
    tlLogicINFO: db.all('tlLogicINFO'),
    connectionINFO: db.all('connectionINFO'),
  } as unknown as LimSimNetworkTables;
  for (const row of tables.laneINFO)
    if (row.rawShape === null)
      throw invalid(
        `${db.file}: laneINFO row (id=${JSON.stringify(row.id)}), column rawShape: NULL; a lane needs its shape`,
      );
  for (const [id, bytes] of tooLong.get('laneINFO')!)
    warn(
      `laneINFO ${JSON.stringify(id)}.rawShape: ${bytes} bytes of points, more than the ${MAX_SHAPE_BYTES} a lane's shape may take; the lane is left out of the road network`,
    );
  tables.laneINFO = tables.laneINFO.filter((row) => !tooLong.get('laneINFO')!.has(String(row.id)));
  for (const [id, bytes] of tooLong.get('junctionINFO') ?? [])
    warn(
      `junctionINFO ${JSON.stringify(id)}.rawShape: ${bytes} bytes of points, more than the ${MAX_SHAPE_BYTES} an outline may take; the junction has no outline`,
    );
  let laneClasses: Map<string, LaneClasses> | undefined;
  if (db.variant === 'limsim++') {
    laneClasses = new Map();
    for (const table of ['laneINFO', 'junctionLaneINFO'] as const)
      for (const r of tables[table] as unknown as Row[])
        laneClasses.set(str(r.id), {
          type: (r.type as string | undefined) ?? null,
          allow: (r.allow as string | undefined) ?? null,
          disallow: (r.disallow as string | undefined) ?? null,
        });
  }
  const junctionLights =
    db.variant === 'limsim++' && !db.hasColumn('junctionLaneINFO', 'tlLogicID')
      ? (db.db.prepare('SELECT DISTINCT id FROM trafficLightStates').all() as Row[]).map((r) => str(r.id))
      : undefined;
  let built;
  try {
    built = networkFromLimSimRows({
      ...tables,
      ...(netBoundary ? { netBoundary } : {}),
      ...(laneClasses ? { laneClasses } : {}),
      ...(junctionLights ? { junctionLights } : {}),
    });
  } catch (error) {
    // The rows' own errors name the table and the row: the file is said here.
    if (error instanceof SimrecError) throw new SimrecError(error.code, `${db.file}: ${error.message}`);
    throw error;
  }
  for (const w of built.warnings) warn(w);
  return built.network;
}

const FIELD_TYPE_OF: Record<string, FieldType> = {
  INT: 'i64',
  INTEGER: 'i64',
  REAL: 'f64',
  TEXT: 'string',
  BOOLEAN: 'i64',
};

/** A frame-keyed table's columns as stream fields, typed as declared; what the table holds is kept as found. */
function frameTableFields(columns: ColumnInfo[], warn: (m: string) => void, table: string): FieldDecl[] {
  const fields: FieldDecl[] = [];
  for (const c of columns) {
    if (c.name === 'frame') continue;
    const type = FIELD_TYPE_OF[c.type.split(/[\s(]/)[0] ?? ''];
    if (!type) {
      warn(`${table}.${c.name}: declared ${c.type || 'without a type'}; left out`);
      continue;
    }
    fields.push({ name: c.name, type, optional: true });
  }
  return fields;
}

/** LimSim++'s camera images: pickled numpy arrays, kept as they are (only Python can read them). */
async function attachImages(
  db: LimSimDatabase,
  rec: RunSink,
  at: (frame: number) => number,
): Promise<number> {
  const cameras = db
    .columnsOf('imageINFO')
    .map((c) => c.name)
    .filter((c) => c !== 'frame');
  let count = 0;
  for (const row of db.db.prepare('SELECT * FROM imageINFO ORDER BY frame').iterate() as Iterable<Row>) {
    count++;
    for (const camera of cameras) {
      const data = row[camera];
      if (!(data instanceof Uint8Array)) continue;
      await rec.attach({
        name: `limsim/imageINFO/${String(row.frame)}/${camera}.pkl`,
        mediaType: 'application/x-python-pickle',
        t: at(Number(row.frame)),
        data,
        metadata: { camera, frame: Number(row.frame) },
      });
    }
  }
  return count;
}
