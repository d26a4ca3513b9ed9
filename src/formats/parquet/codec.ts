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
    // Tables hold samples, actors, presence and runs: a run's files (its road network, images) stay behind.
    for (const source of sources.runs) {
      const files = await source.attachments();
      if (files.length)
        options.warn(
          `run ${source.run.id}`,
          `${files.length} attachments left out (${files
            .slice(0, 3)
            .map((a) => a.name)
            .join(
              ', ',
            )}${files.length > 3 ? ', ...' : ''}): Parquet tables hold samples, actors and runs only`,
        );
    }
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
