import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ActorInfo } from '../../model/run.js';
import type { RunSource } from '../../model/run-ports.js';
import type { FieldDecl, StreamInfo } from '../../model/stream.js';
import { streamFields, streamTableLayout, type TableColumn } from './table-columns.js';
import { ParquetTableWriter } from './table-writer.js';

/**
 * Runs as Parquet tables in one folder, for DuckDB, pandas, polars and Spark:
 * - `<stream name>.parquet`: every stream of that name of every run given, one row per sample:
 *   `run`, `actor`, `t` (TIMESTAMP, microseconds, UTC), `step`, then the streams' fields;
 * - `actors.parquet`: one row per actor of each run, its presence intervals a list of {from, to};
 * - `runs.parquet`: one row per run; `runs.json`: the runs and every stream's schema, as simrec has them.
 * Several runs share the tables (the `run` column tells them apart): one query reads them all.
 */

export interface ParquetTablesOptions {
  warn: (where: string, message: string) => void;
  onProgress: (done: number, total: number) => void;
  signal: AbortSignal;
  /** Only the stream tables of these names (actors and runs are always written); all when absent. */
  tables?: ReadonlySet<string>;
  /** Rows per row group (see table-writer.ts). */
  rowGroupRows?: number;
  /**
   * False for a Hive-partitioned dataset (`TABLE/run=ID/`), whose readers take `run` from the folder's
   * name and refuse (Spark) or shadow it (DuckDB, Polars) when a file holds it too. Default true.
   */
  runColumn?: boolean;
  /**
   * Part `index` of `count` of each stream table: its streams cut, in order, into `count` parts of
   * about as many samples each, or fewer parts where a part would hold fewer than `fewest` samples
   * (a small table is all part 0), every part with the columns of the whole table; the actors and runs
   * tables with part 0 only. A big run written side by side, a part a thread
   * (tables-writer-threads.ts). Default: the whole.
   */
  part?: TablePart;
}

export interface ParquetTable {
  file: string;
  rows: number;
  /** The file's columns, `name:kind` each, in order: files with the same read as one without unifying. */
  columns: string[];
}

export interface ParquetTablesResult {
  runs: number[];
  /** By table name (what `simrec sql` calls it): its file in the folder and its row count. */
  tables: Record<string, ParquetTable>;
  bytes: number;
  samples: number;
}

/** Table names the folder gives its own tables; a stream of such a name gets a prefix. */
const OWN_TABLES = new Set(['actors', 'runs']);
export const streamTableName = (stream: string): string =>
  OWN_TABLES.has(stream) ? `stream_${stream}` : stream;

interface StreamOfRun {
  source: RunSource;
  stream: StreamInfo;
}

export async function writeParquetTables(
  sources: readonly RunSource[],
  folder: string,
  options: ParquetTablesOptions,
): Promise<ParquetTablesResult> {
  mkdirSync(folder, { recursive: true });
  const columnsOf = (columns: readonly TableColumn[]): TableColumn[] =>
    options.runColumn === false ? columns.filter((c) => c.name !== 'run') : [...columns];
  const streamsOf = new Map<RunSource, StreamInfo[]>();
  const actorsOf = new Map<RunSource, ActorInfo[]>();
  const byName = new Map<string, StreamOfRun[]>();
  for (const source of sources) {
    const streams = await source.streams();
    streamsOf.set(source, streams);
    actorsOf.set(source, await source.actors());
    for (const stream of streams) {
      if (options.tables && !options.tables.has(streamTableName(stream.name))) continue;
      const list = byName.get(stream.name) ?? [];
      list.push({ source, stream });
      byName.set(stream.name, list);
    }
  }
  const part: TablePart = options.part ?? { index: 0, count: 1 };
  const inPart = new Map([...byName].map(([name, streams]) => [name, streamsOfPart(streams, part)]));
  const total = [...inPart.values()].flat().reduce((sum, s) => sum + s.stream.samples, 0);
  let done = 0;
  const tables: Record<string, ParquetTable> = {};
  const write = (name: string, writer: ParquetTableWriter): void => {
    writer.close();
    tables[name] = {
      file: `${name}.parquet`,
      rows: writer.rows,
      columns: writer.columns.map((c) => `${c.name}:${c.kind}${c.length ? `[${c.length}]` : ''}`),
    };
  };

  for (const name of [...byName.keys()].sort()) {
    const streams = inPart.get(name)!;
    if (streams.length === 0) continue;
    const table = streamTableName(name);
    const first = part.index === 0;
    if (table !== name && first)
      options.warn(`stream ${name}`, `written as table ${table} (${name} is the folder's own table)`);
    // The whole table's columns, whichever part: its parts are read as one table.
    const layout = streamTableLayout(byName.get(name)!.map((s) => s.stream));
    if (first) for (const note of layout.notes) options.warn(`table ${table}`, note);
    const writer = new ParquetTableWriter(join(folder, `${table}.parquet`), columnsOf(layout.columns), {
      table,
      ...(options.rowGroupRows ? { rowGroupRows: options.rowGroupRows } : {}),
      extra: { streams: streams.map((s) => ({ run: s.source.run.id, stream: s.stream.id })) },
    });
    for (const { source, stream } of streams) {
      const fields = new Map<string, FieldDecl>();
      for (const f of streamFields(stream)) fields.set(f.name, f);
      // Transient: each chunk is read once, and kept it filled the store's cache on a long run.
      for await (const batch of source.columns(stream.id, { transient: true })) {
        writer.appendBatch(source.run.id, stream.actor, batch, fields);
        done += batch.t.length;
        options.onProgress(done, total);
        options.signal.throwIfAborted();
      }
    }
    write(table, writer);
  }
  if (part.index > 0)
    return { runs: sources.map((s) => s.run.id), tables, bytes: bytesOf(folder, tables), samples: done };

  const actors = new ParquetTableWriter(join(folder, 'actors.parquet'), columnsOf(ACTOR_COLUMNS), {
    table: 'actors',
  });
  for (const source of sources)
    for (const a of actorsOf.get(source)!)
      actors.appendRow({
        run: source.run.id,
        actor: a.id,
        kind: a.kind,
        source_class: a.sourceClass,
        length: a.extents?.length,
        width: a.extents?.width,
        height: a.extents?.height,
        record: a.record,
        attributes: a.attributes,
        options: a.options,
        presence: a.presence,
      });
  write('actors', actors);

  const runs = new ParquetTableWriter(join(folder, 'runs.parquet'), columnsOf(RUN_COLUMNS), {
    table: 'runs',
  });
  for (const source of sources) {
    const { run } = source;
    const streams = streamsOf.get(source)!;
    runs.appendRow({
      run: run.id,
      begin: run.begin,
      end: run.end,
      duration: run.end === null ? null : (run.end - run.begin) / 1e6,
      end_reason: run.endReason,
      state: run.state,
      simulator: run.simulator.name,
      simulator_version: run.simulator.version,
      description: run.description,
      metadata: run.metadata,
      actor_count: actorsOf.get(source)!.length,
      stream_count: streams.length,
      sample_count: streams.reduce((sum, s) => sum + s.samples, 0),
    });
  }
  write('runs', runs);

  // The runs as simrec describes them, with every stream's schema (units, descriptions, rates).
  const description = {
    runs: sources.map((source) => ({ ...source.run, streams: streamsOf.get(source)! })),
    tables,
  };
  writeFileSync(join(folder, 'runs.json'), `${JSON.stringify(description, null, 2)}\n`);

  return { runs: sources.map((s) => s.run.id), tables, bytes: bytesOf(folder, tables), samples: done };
}

export interface TablePart {
  index: number;
  count: number;
  /** The fewest samples a part of a table holds (default 1). */
  fewest?: number;
}

const bytesOf = (folder: string, tables: Record<string, ParquetTable>): number =>
  Object.values(tables).reduce((sum, t) => sum + statSync(join(folder, t.file)).size, 0);

/**
 * A table's streams in a part: each stream goes to the part its first sample falls in when the
 * table's samples, in stream order, are cut in equal spans (as many as `fewest` allows, `count` at
 * most). A stream is never cut.
 */
function streamsOfPart<S extends { stream: StreamInfo }>(streams: readonly S[], part: TablePart): S[] {
  const total = streams.reduce((sum, s) => sum + s.stream.samples, 0);
  const count = Math.max(1, Math.min(part.count, Math.floor(total / Math.max(1, part.fewest ?? 1))));
  if (count === 1) return part.index === 0 ? [...streams] : [];
  const { index } = part;
  let before = 0;
  return streams.filter((s) => {
    const part = total === 0 ? 0 : Math.min(count - 1, Math.floor((before * count) / total));
    before += s.stream.samples;
    return part === index;
  });
}

const ACTOR_COLUMNS: TableColumn[] = [
  { name: 'run', kind: 'i64', required: true, description: 'run id' },
  { name: 'actor', kind: 'string', required: true, description: 'actor id, unique within its run' },
  { name: 'kind', kind: 'string', required: true, description: 'ego, vehicle, pedestrian, traffic_light...' },
  { name: 'source_class', kind: 'string', description: "the simulator's own class or blueprint" },
  { name: 'length', kind: 'f64', unit: 'm', description: 'bounding box extent along x' },
  { name: 'width', kind: 'f64', unit: 'm', description: 'bounding box extent along y' },
  { name: 'height', kind: 'f64', unit: 'm', description: 'bounding box extent along z' },
  { name: 'record', kind: 'bool', required: true, description: 'whether its samples were recorded' },
  { name: 'attributes', kind: 'json', description: 'static attributes, as the simulator gave them' },
  { name: 'options', kind: 'json', description: 'recording options' },
  {
    name: 'presence',
    kind: 'presence',
    description: 'when the actor was in the run: present at t when from <= t < to (to null: to the end)',
  },
];

const RUN_COLUMNS: TableColumn[] = [
  { name: 'run', kind: 'i64', required: true, description: 'run id' },
  { name: 'begin', kind: 'timestamp', required: true, description: 'start of the run' },
  { name: 'end', kind: 'timestamp', description: 'end of the run; null while recording' },
  { name: 'duration', kind: 'f64', unit: 's', description: 'end - begin' },
  { name: 'end_reason', kind: 'string', description: 'why the run ended' },
  { name: 'state', kind: 'string', required: true, description: 'recording or closed' },
  { name: 'simulator', kind: 'string', required: true },
  { name: 'simulator_version', kind: 'string' },
  { name: 'description', kind: 'string' },
  { name: 'metadata', kind: 'json', description: 'town, weather, seeds, suite...' },
  // Counts are *_count, as in simrec's JSON (docs/command-line.md: `actors` and `streams` are always lists).
  { name: 'actor_count', kind: 'i64', required: true, description: 'number of actors' },
  { name: 'stream_count', kind: 'i64', required: true, description: 'number of streams' },
  { name: 'sample_count', kind: 'i64', required: true, description: 'number of samples, all streams' },
];
