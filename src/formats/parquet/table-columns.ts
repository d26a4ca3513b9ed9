import type { FieldDecl, FieldType, StreamInfo } from '../../model/stream.js';

/**
 * The columns of one Parquet table, and how each is typed in the file. A stream table holds every
 * stream of one name (`state`, `control`, `events`...) of every run exported, one row per sample,
 * led by `run`, `actor`, `t` and `step`, so the same SQL answers one run or many. Its field columns
 * are the union of the fields of those streams: actors' `state` streams may declare different fields.
 */

/**
 * How a column is held while its row group fills and how it is written. The simrec field types, plus
 * `timestamp` (integer microseconds since the Unix epoch, written as Parquet's TIMESTAMP(MICROS, UTC))
 * and `presence` (an actor's presence intervals: a list of {from, to} timestamps).
 */
export type ColumnKind = FieldType | 'timestamp' | 'presence';

export interface TableColumn {
  /** The column's name in the file. */
  name: string;
  kind: ColumnKind;
  /** Every value present: written REQUIRED (run, t, step). */
  required?: boolean;
  /** For `vec`: the number of components. */
  length?: number;
  /** SI unit, kept in the file's key-value metadata (`simrec.unit.<column>`). */
  unit?: string;
  description?: string;
  /** The stream field the column holds, when its name had to change (a field named like a key column). */
  field?: string;
  /**
   * Stored as differences from row to row (Parquet's DELTA_BINARY_PACKED): integers that rise steadily
   * along a stream's rows, a sample's time and step, take a few bits a row where plain encoding takes
   * eight bytes (most of a state table's bytes, performance-history.md).
   */
  delta?: boolean;
}

/** The leading columns of every stream table. */
export const KEY_COLUMNS: readonly TableColumn[] = [
  { name: 'run', kind: 'i64', required: true, delta: true, description: 'run id' },
  { name: 'actor', kind: 'string', description: "the stream's actor; null for a run-level stream" },
  {
    name: 't',
    kind: 'timestamp',
    required: true,
    delta: true,
    description: 'sample time, microseconds since the Unix epoch',
  },
  { name: 'step', kind: 'i64', required: true, delta: true, description: "the simulator's step" },
];

const KEY_NAMES = new Set(KEY_COLUMNS.map((c) => c.name));

const NUMERIC: readonly FieldType[] = ['f64', 'f32', 'i32', 'i64', 'bool'];

/**
 * The one type a field gets in a table when its streams disagree: numbers of different widths widen
 * to f64 (every simrec number is a float64 underneath, so nothing is lost); anything else mixed
 * (a string here, a number there, vectors of two lengths) is kept as JSON, which holds each value.
 */
function widen(a: FieldDecl, b: FieldDecl): FieldDecl {
  if (a.type === b.type && (a.type !== 'vec' || a.length === b.length)) return a;
  if (NUMERIC.includes(a.type) && NUMERIC.includes(b.type)) return { ...a, type: 'f64' };
  const { length: _length, ...rest } = a;
  return { ...rest, type: 'json' };
}

export interface StreamTableLayout {
  columns: TableColumn[];
  /** What could not be kept as the streams declared it, for the export's warnings. */
  notes: string[];
}

/** The columns of the table of the streams `streams` (all of one name, of one or several runs). */
export function streamTableLayout(streams: readonly StreamInfo[]): StreamTableLayout {
  const fields = new Map<string, FieldDecl>();
  const notes: string[] = [];
  for (const stream of streams)
    for (const field of streamFields(stream)) {
      const known = fields.get(field.name);
      if (!known) {
        fields.set(field.name, field);
        continue;
      }
      const wider = widen(known, field);
      if (wider.type !== known.type || wider.length !== known.length)
        notes.push(
          `field ${field.name}: ${describeType(known)} in some streams, ${describeType(field)} in ${stream.id}: written as ${wider.type}`,
        );
      if (known.unit !== field.unit && known.unit !== undefined && field.unit !== undefined)
        notes.push(
          `field ${field.name}: unit ${known.unit} in some streams, ${field.unit} in ${stream.id}: the metadata keeps ${known.unit}`,
        );
      fields.set(field.name, { ...wider, unit: known.unit ?? field.unit });
    }
  const columns: TableColumn[] = [...KEY_COLUMNS];
  for (const field of fields.values()) {
    // t and step cannot be field names (model/stream.ts); run and actor can.
    const name = KEY_NAMES.has(field.name) ? `${field.name}_field` : field.name;
    if (name !== field.name)
      notes.push(`field ${field.name}: written as column ${name} (${field.name} is the table's key column)`);
    const column: TableColumn = { name, kind: field.type };
    if (name !== field.name) column.field = field.name;
    if (field.type === 'vec') column.length = field.length!;
    if (field.unit !== undefined) column.unit = field.unit;
    if (field.description !== undefined) column.description = field.description;
    columns.push(column);
  }
  return { columns, notes };
}

/** A stream's fields: declared, then those that arrived undeclared (with the type seen). */
export const streamFields = (stream: StreamInfo): FieldDecl[] => [
  ...stream.fields,
  ...stream.extraFields.map((f) => ({ name: f.name, type: f.type, optional: true })),
];

const describeType = (f: FieldDecl): string => (f.type === 'vec' ? `vec(${f.length})` : f.type);
