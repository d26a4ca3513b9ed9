import type { ColumnBatch, ColumnValues } from '../../model/columns.js';
import type { ChunkColumn } from './chunk-codes.js';

/**
 * Decoded rows gathered into columns: a target that blocks of one or several chunks are decoded into
 * (chunk-decoder.ts), and batches of one stream joined end to end.
 */

/** Where decoded rows go: columns `n` rows long (a whole chunk's, or a joined read's), from row `row` on. */
export interface RowsTarget {
  batch: ColumnBatch;
  row: number;
  /** The length of a column made for a column rows bring first. */
  n: number;
}

/** Values a row holds in `column`: a vec's length, 1 for the others. */
export const valuesPerRow = (column: ChunkColumn): number => (column.type === 'vec' ? column.length! : 1);

/** Whether a column's values are numbers (a Float64Array): all but strings and JSON. */
export const isNumeric = (column: ChunkColumn): boolean => column.type !== 'string' && column.type !== 'json';

/**
 * Columns `n` rows long that rows are decoded or copied into. Its columns are made as rows first bring
 * them (targetColumn): made for every declared column up front, those no block has were a
 * large share of a trajectory's time, allocated, filled and deleted again.
 */
export function rowsTarget(n: number): RowsTarget {
  return { batch: { t: new Float64Array(n), step: new Float64Array(n), columns: {} }, row: 0, n };
}

/**
 * A target of `rows` rows with `columns` made beforehand, in their order: time, step and the numeric
 * ones are parts of one buffer of just their size, one allocation instead of one an array. Small reads
 * (a block decoded on its own, a window's slice of it) made thousands of arrays of a few dozen rows
 * each, and their allocations and the collector's work on them were most of the read.
 */
export function packedTarget(rows: number, columns: readonly ChunkColumn[]): RowsTarget {
  let floats = 2 * rows;
  for (const column of columns) if (isNumeric(column)) floats += rows * valuesPerRow(column);
  const buffer = new Float64Array(floats);
  const target: RowsTarget = {
    batch: { t: buffer.subarray(0, rows), step: buffer.subarray(rows, 2 * rows), columns: {} },
    row: 0,
    n: rows,
  };
  let at = 2 * rows;
  for (const column of columns)
    target.batch.columns[column.name] = isNumeric(column)
      ? buffer.subarray(at, (at += rows * valuesPerRow(column)))
      : new Array<unknown>(rows);
  return target;
}

/** A target's column for `column`, made when rows first bring it (no value in the rows before). */
export function targetColumn(target: RowsTarget, column: ChunkColumn): ColumnValues {
  let whole = target.batch.columns[column.name];
  if (whole === undefined) {
    whole = isNumeric(column)
      ? new Float64Array(target.n * valuesPerRow(column))
      : new Array<unknown>(target.n);
    markAbsent(whole, 0, target.row, valuesPerRow(column));
    target.batch.columns[column.name] = whole;
  }
  return whole;
}

/**
 * A filled target as a batch, its columns in the chunks' column order (declared fields first, then the
 * undeclared ones as chunks brought them).
 */
export function orderedColumns(
  target: RowsTarget,
  chunkColumns: readonly (readonly ChunkColumn[])[],
): ColumnBatch {
  const columns: Record<string, ColumnValues> = {};
  for (const list of chunkColumns)
    for (const c of list) {
      const values = target.batch.columns[c.name];
      if (values !== undefined && !(c.name in columns)) columns[c.name] = values;
    }
  return { t: target.batch.t, step: target.batch.step, columns };
}

/**
 * The target's next `rows` rows marked as having no value in the columns earlier rows brought and
 * `rowsBatch` (what those rows hold) lacks.
 */
export function markAbsentRows(target: RowsTarget, rowsBatch: ColumnBatch, rows: number): void {
  for (const name in target.batch.columns) {
    if (rowsBatch.columns[name] !== undefined) continue;
    const values = target.batch.columns[name]!;
    markAbsent(values, target.row, rows, values instanceof Float64Array ? values.length / target.n : 1);
  }
}

/** Rows [from, from + rows) of a chunk-wide column marked as having no value (NaN, undefined). */
function markAbsent(values: ColumnValues, from: number, rows: number, width: number): void {
  if (values instanceof Float64Array) values.fill(NaN, from * width, (from + rows) * width);
  else values.fill(undefined, from, from + rows);
}
/** Batches of one stream, in time order, as one (columns absent in some are absent in those rows). */
export function concatBatches(batches: readonly ColumnBatch[], columns: readonly ChunkColumn[]): ColumnBatch {
  if (batches.length === 1) return batches[0]!;
  const n = batches.reduce((sum, b) => sum + b.t.length, 0);
  const t = new Float64Array(n);
  const step = new Float64Array(n);
  let offset = 0;
  for (const b of batches) {
    t.set(b.t, offset);
    step.set(b.step, offset);
    offset += b.t.length;
  }
  const out: Record<string, ColumnValues> = {};
  for (const column of columns) {
    if (!batches.some((b) => column.name in b.columns)) continue;
    const width = valuesPerRow(column);
    const numeric = isNumeric(column);
    const values: ColumnValues = numeric ? new Float64Array(n * width).fill(NaN) : new Array<unknown>(n);
    let row = 0;
    for (const b of batches) {
      const part = b.columns[column.name];
      if (part !== undefined) {
        if (numeric) (values as Float64Array).set(part as Float64Array, row * width);
        else for (let i = 0; i < b.t.length; i++) (values as unknown[])[row + i] = (part as unknown[])[i];
      }
      row += b.t.length;
    }
    out[column.name] = values;
  }
  return { t, step, columns: out };
}
