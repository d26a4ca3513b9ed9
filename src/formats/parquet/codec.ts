import type { FormatCodec } from '../../model/codec-port.js';
import { writeParquetTables } from './write-parquet.js';

/**
 * Parquet tables for analysis (DuckDB, pandas, polars): export only. Several runs go into the same
 * tables, told apart by their `run` column (see write-parquet.ts).
 */
export const parquetCodec: FormatCodec = {
  name: 'parquet',
  description:
    'Parquet tables (a file per stream name, actors, runs) for DuckDB, pandas, polars; export only',
  output: 'folder',
  multiRun: true,
  async write(sources, location, options) {
    const result = await writeParquetTables(sources.runs, location, {
      warn: options.warn,
      onProgress: options.onProgress,
      signal: options.signal,
    });
    const tables = Object.fromEntries(
      Object.entries(result.tables).map(([name, t]) => [name, { file: t.file, rows: t.rows }]),
    );
    return { runs: result.runs, tables, bytes: result.bytes, samples: result.samples };
  },
};
