import { fileWriter, ParquetWriter } from 'hyparquet-writer';
import type { ColumnBatch } from '../../model/columns.js';
import type { PresenceInterval } from '../../model/run.js';
import type { FieldDecl } from '../../model/stream.js';
import type { ColumnKind, TableColumn } from './table-columns.js';

type SchemaElement = ConstructorParameters<typeof ParquetWriter>[0]['schema'][number];
type ColumnSource = Parameters<ParquetWriter['write']>[0]['columnData'][number];
type ColumnData = ColumnSource['data'];

/**
 * Rows per row group: DuckDB's own row group size (122,880 = 60 x its 2,048-row vectors), which its
 * scans split work by; big enough that a row group's column chunk compresses well, small enough
 * that the writer holds only one row group of one table at a time however long the run.
 */
export const ROW_GROUP_ROWS = 122_880;

/** What the file says about itself, in its key-value metadata (readable in DuckDB, pyarrow, pandas). */
export interface TableMetadata {
  /** Rows per row group (ROW_GROUP_ROWS unless given: tests cross row groups with few rows). */
  rowGroupRows?: number;
  /** The table's name: a stream name, `actors` or `runs`. */
  table: string;
  /** More entries, as JSON values. */
  extra?: Record<string, unknown>;
}

/** A value of a row appended row-wise (actors, runs): numbers, strings, JSON, timestamps in microseconds. */
export type RowValue = number | string | boolean | null | undefined | unknown[] | object;

/**
 * One Parquet file being written a row group at a time. Rows arrive as stream batches (columns, the
 * fast path) or as row objects (the small actors and runs tables); each column fills a buffer of its
 * own kind (numbers in a Float64Array with NaN for "absent", as ColumnBatch holds them), and every
 * ROW_GROUP_ROWS rows the buffers become a row group, compressed with Snappy (every Parquet reader
 * has it, and it costs little time).
 */
export class ParquetTableWriter {
  private readonly writer: ParquetWriter;
  private readonly buffers: (Float64Array | unknown[])[];
  private readonly groupRows: number;
  private filled = 0;
  private total = 0;

  readonly columns: readonly TableColumn[];

  constructor(path: string, columns: readonly TableColumn[], metadata: TableMetadata) {
    this.columns = columns;
    this.groupRows = metadata.rowGroupRows ?? ROW_GROUP_ROWS;
    this.buffers = columns.map((c) =>
      isNumeric(c.kind) ? new Float64Array(this.groupRows) : new Array<unknown>(this.groupRows),
    );
    this.writer = new ParquetWriter({
      writer: fileWriter(path),
      schema: parquetSchema(columns),
      codec: 'SNAPPY',
      kvMetadata: keyValueMetadata(columns, metadata),
      createdBy: 'simrec (hyparquet-writer)',
    });
  }

  /** Rows written so far. */
  get rows(): number {
    return this.total + this.filled;
  }

  /** One stream's batch, as rows of `run` and `actor`; `fields` are the stream's own (declared and seen). */
  appendBatch(
    run: number,
    actor: string | null,
    batch: ColumnBatch,
    fields: ReadonlyMap<string, FieldDecl>,
  ): void {
    const n = batch.t.length;
    for (let start = 0; start < n;) {
      const count = Math.min(n - start, this.groupRows - this.filled);
      this.columns.forEach((column, c) => {
        const buffer = this.buffers[c]!;
        const at = this.filled;
        switch (column.name) {
          case 'run':
            (buffer as Float64Array).fill(run, at, at + count);
            return;
          case 'actor':
            (buffer as unknown[]).fill(actor ?? undefined, at, at + count);
            return;
          case 't':
            (buffer as Float64Array).set(batch.t.subarray(start, start + count), at);
            return;
          case 'step':
            (buffer as Float64Array).set(batch.step.subarray(start, start + count), at);
            return;
        }
        const field = column.field ?? column.name;
        copyField(batch.columns[field], fields.get(field), buffer, at, start, count);
      });
      this.filled += count;
      start += count;
      if (this.filled === this.groupRows) this.flush();
    }
  }

  /** Rows given as objects by column name (absent or null: no value). */
  appendRow(row: Record<string, RowValue>): void {
    this.columns.forEach((column, c) => {
      const value = row[column.name];
      const buffer = this.buffers[c]!;
      if (buffer instanceof Float64Array)
        buffer[this.filled] =
          typeof value === 'number' ? value : typeof value === 'boolean' ? Number(value) : NaN;
      else buffer[this.filled] = value ?? undefined;
    });
    if (++this.filled === this.groupRows) this.flush();
  }

  /** Writes what is buffered and the file's footer. */
  close(): void {
    if (this.filled > 0 || this.total === 0) this.flush();
    void this.writer.finish(); // a file writer is synchronous: done on return (the promise is for other writers)
  }

  private flush(): void {
    const n = this.filled;
    const columnData: ColumnSource[] = this.columns.map((column, c) => ({
      name: column.name,
      data: parquetValues(column.kind, this.buffers[c]!, n),
      nullable: !column.required,
      ...(column.delta ? { encoding: 'DELTA_BINARY_PACKED' as const } : {}),
    }));
    // The file writer is synchronous: the buffers are free again when write returns (its promise type is
    // for other writers).
    void this.writer.write({ columnData, rowGroupSize: Math.max(n, 1) });
    this.total += n;
    this.filled = 0;
  }
}

const isNumeric = (kind: ColumnKind): boolean =>
  kind === 'f64' ||
  kind === 'f32' ||
  kind === 'i32' ||
  kind === 'i64' ||
  kind === 'bool' ||
  kind === 'timestamp';

/** Rows `start..start+count` of a batch's column (of the stream's field `source`) into a buffer at `at`. */
function copyField(
  values: ColumnBatch['columns'][string] | undefined,
  source: FieldDecl | undefined,
  buffer: Float64Array | unknown[],
  at: number,
  start: number,
  count: number,
): void {
  // No values: a stream without this field (another actor's schema), or a field absent from the batch.
  if (buffer instanceof Float64Array) {
    if (values instanceof Float64Array) buffer.set(values.subarray(start, start + count), at);
    else if (values === undefined) buffer.fill(NaN, at, at + count);
    else
      for (let i = 0; i < count; i++) {
        const v = values[start + i];
        buffer[at + i] = typeof v === 'number' ? v : typeof v === 'boolean' ? Number(v) : NaN;
      }
    return;
  }
  if (values === undefined) {
    buffer.fill(undefined, at, at + count);
    return;
  }
  if (values instanceof Float64Array) {
    // A vec, or numbers in a column widened to JSON: one value (or array) per row.
    const width = source?.type === 'vec' ? source.length! : 1;
    for (let i = 0; i < count; i++) {
      const from = (start + i) * width;
      const first = values[from]!;
      buffer[at + i] = Number.isNaN(first)
        ? undefined
        : source?.type === 'vec'
          ? Array.from(values.subarray(from, from + width))
          : source?.type === 'bool'
            ? first === 1
            : first;
    }
    return;
  }
  for (let i = 0; i < count; i++) buffer[at + i] = values[start + i];
}

/** A buffer's first n rows as hyparquet-writer takes them: typed arrays when no row is absent. */
function parquetValues(kind: ColumnKind, buffer: Float64Array | unknown[], n: number): ColumnData {
  if (!(buffer instanceof Float64Array)) {
    const out = buffer.slice(0, n).map((v) => (v === undefined ? null : v));
    if (kind === 'presence')
      return out.map((v) =>
        v === null
          ? null
          : (v as PresenceInterval[]).map((iv) => ({
              from: BigInt(iv.from),
              to: iv.to === null ? null : BigInt(iv.to),
            })),
      );
    return out as ColumnData;
  }
  const values = buffer.subarray(0, n);
  let present = 0;
  for (let i = 0; i < n; i++) if (!Number.isNaN(values[i]!)) present++;
  // A field no row of the group has (a declared field the source never sends): nulls, made at once.
  if (present === 0) return new Array<null>(n).fill(null);
  const absent = present < n;
  switch (kind) {
    case 'f64':
      return absent ? withNulls(values, (v) => v) : values.slice();
    case 'f32':
      return absent ? withNulls(values, (v) => v) : Float32Array.from(values);
    case 'i32':
      return absent ? withNulls(values, (v) => v) : Int32Array.from(values);
    case 'bool':
      return withNulls(values, (v) => v === 1);
    default: {
      // i64 and timestamp: 64-bit integers, which hyparquet-writer takes as bigints.
      if (!absent) {
        const out = new BigInt64Array(n);
        for (let i = 0; i < n; i++) out[i] = BigInt(values[i]!);
        return out;
      }
      return withNulls(values, (v) => BigInt(v));
    }
  }
}

/** Numbers as an array with null where a row has none (NaN), each other converted. */
function withNulls<T>(values: Float64Array, convert: (v: number) => T): (T | null)[] {
  const out = new Array<T | null>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    out[i] = Number.isNaN(v) ? null : convert(v);
  }
  return out;
}

const TIMESTAMP: Pick<SchemaElement, 'type' | 'converted_type' | 'logical_type'> = {
  type: 'INT64',
  converted_type: 'TIMESTAMP_MICROS',
  logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' },
};

/** The file's schema: a flat list of columns; vectors and presence as Parquet's three-level LIST. */
function parquetSchema(columns: readonly TableColumn[]): SchemaElement[] {
  const schema: SchemaElement[] = [{ name: 'root', num_children: columns.length }];
  for (const column of columns) {
    const repetition_type = column.required ? 'REQUIRED' : 'OPTIONAL';
    const { name } = column;
    switch (column.kind) {
      case 'f64':
        schema.push({ name, repetition_type, type: 'DOUBLE' });
        break;
      case 'f32':
        schema.push({ name, repetition_type, type: 'FLOAT' });
        break;
      case 'i32':
        schema.push({ name, repetition_type, type: 'INT32' });
        break;
      case 'i64':
        schema.push({ name, repetition_type, type: 'INT64' });
        break;
      case 'bool':
        schema.push({ name, repetition_type, type: 'BOOLEAN' });
        break;
      case 'string':
        schema.push({
          name,
          repetition_type,
          type: 'BYTE_ARRAY',
          converted_type: 'UTF8',
          logical_type: { type: 'STRING' },
        });
        break;
      case 'json':
        schema.push({
          name,
          repetition_type,
          type: 'BYTE_ARRAY',
          converted_type: 'JSON',
          logical_type: { type: 'JSON' },
        });
        break;
      case 'timestamp':
        schema.push({ name, repetition_type, ...TIMESTAMP });
        break;
      case 'vec':
        schema.push(
          { name, repetition_type, converted_type: 'LIST', num_children: 1 },
          { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
          { name: 'element', repetition_type: 'REQUIRED', type: 'DOUBLE' },
        );
        break;
      case 'presence':
        schema.push(
          { name, repetition_type, converted_type: 'LIST', num_children: 1 },
          { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
          { name: 'element', repetition_type: 'REQUIRED', num_children: 2 },
          { name: 'from', repetition_type: 'REQUIRED', ...TIMESTAMP },
          { name: 'to', repetition_type: 'OPTIONAL', ...TIMESTAMP },
        );
        break;
    }
  }
  return schema;
}

/**
 * Units and types in the file's key-value metadata, where DuckDB (`parquet_kv_metadata`), pyarrow
 * (`schema.metadata`) and pandas read them: `simrec.unit.<column>` for a quick look-up, and
 * `simrec.columns` with every column's simrec type, unit and description.
 */
function keyValueMetadata(columns: readonly TableColumn[], metadata: TableMetadata) {
  const kv = [{ key: 'simrec.table', value: metadata.table }];
  for (const c of columns) if (c.unit !== undefined) kv.push({ key: `simrec.unit.${c.name}`, value: c.unit });
  kv.push({
    key: 'simrec.columns',
    value: JSON.stringify(
      columns.map((c) => ({
        name: c.name,
        type: c.kind,
        ...(c.length !== undefined ? { length: c.length } : {}),
        ...(c.unit !== undefined ? { unit: c.unit } : {}),
        ...(c.description !== undefined ? { description: c.description } : {}),
        ...(c.field !== undefined ? { field: c.field } : {}),
      })),
    ),
  });
  for (const [key, value] of Object.entries(metadata.extra ?? {}))
    kv.push({ key: `simrec.${key}`, value: JSON.stringify(value) });
  return kv;
}
