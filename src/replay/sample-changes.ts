import { isDeepStrictEqual } from 'node:util';
import type { ColumnBatch, ColumnValues } from '../model/columns.js';
import type { RowFilter } from './run-queries.js';

/**
 * Which rows of a stream's batches differ from the row before them, judged on the columns: a traffic
 * light's hour whose countdown is read but not compared is a few hundred switches among 36,000 rows,
 * and building a sample object for every row only to compare it was most of what asking for the
 * switches cost (and its garbage the server's collections). A filter for streamSamples, which builds
 * samples of the rows kept only; kept out of run-queries.ts, whose types the viewer's code reads
 * without Node's modules.
 *
 * Two rows are the same when every field but t and step holds the same value in both, a field absent
 * in both counting as the same (sameValue below is what `isDeepStrictEqual` of the two samples said
 * of each field, the rule before columns).
 */
export class ChangedRows implements RowFilter {
  /** The previous batch and its last row: the first row of the next batch is compared with it. */
  private last: { batch: ColumnBatch; row: number } | undefined;

  /** The rows of `batch` to keep: the first of all batches, and each that differs from its predecessor. */
  of(batch: ColumnBatch): number[] {
    const n = batch.t.length;
    if (n === 0) return [];
    const changed = new Uint8Array(n);
    changed[0] = this.last === undefined || !sameRows(this.last.batch, this.last.row, batch, 0) ? 1 : 0;
    for (const values of Object.values(batch.columns)) markChanges(values, n, changed);
    this.last = { batch, row: n - 1 };
    const rows: number[] = [];
    for (let i = 0; i < n; i++) if (changed[i]) rows.push(i);
    return rows;
  }
}

/** Sets changed[i] for each row i >= 1 whose value in this column differs from row i - 1's. */
function markChanges(values: ColumnValues, n: number, changed: Uint8Array): void {
  if (!(values instanceof Float64Array)) {
    for (let i = 1; i < n; i++) if (!changed[i] && !sameValue(values[i], values[i - 1])) changed[i] = 1;
    return;
  }
  // A vector column holds `width` numbers a row. NaN marks an absent value (in a vector, its first
  // number), which is the same as another absent one.
  const width = values.length / n;
  for (let i = 1; i < n; i++) {
    if (changed[i]) continue;
    const row = i * width;
    const before = row - width;
    if (Number.isNaN(values[row]) && Number.isNaN(values[before])) continue;
    for (let k = 0; k < width; k++)
      if (!Object.is(values[row + k], values[before + k])) {
        changed[i] = 1;
        break;
      }
  }
}

/** What isDeepStrictEqual says of two values of a field (numbers by Object.is: 0 is not -0). */
function sameValue(a: unknown, b: unknown): boolean {
  if (typeof a === 'number') return Object.is(a, b);
  if (a === b) return true;
  return (
    typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && isDeepStrictEqual(a, b)
  );
}

/** Row i of batch a against row j of batch b, over the columns of both (a missing column is absent). */
function sameRows(a: ColumnBatch, i: number, b: ColumnBatch, j: number): boolean {
  const names = new Set([...Object.keys(a.columns), ...Object.keys(b.columns)]);
  for (const name of names) if (!sameValue(rowValue(a, name, i), rowValue(b, name, j))) return false;
  return true;
}

/**
 * A row's value in a column, undefined where absent: a number, a vector's numbers as an array, or the
 * value an array column holds.
 */
function rowValue(batch: ColumnBatch, name: string, row: number): unknown {
  const values = batch.columns[name];
  if (values === undefined) return undefined;
  if (!(values instanceof Float64Array)) return values[row];
  const width = values.length / batch.t.length;
  if (Number.isNaN(values[row * width])) return undefined;
  return width === 1 ? values[row] : Array.from(values.subarray(row * width, (row + 1) * width));
}
