/**
 * Parquet export and SQL across runs (#26): a generated run of 10 million state samples (1,000 actors
 * x 10,000 steps) exported to Parquet (samples per second, bytes per sample beside the store's), and
 * one aggregate over every sample, timed in DuckDB on those files: what `simrec sql` runs after the
 * export, and what a user runs on the folder of `simrec export RUN parquet DIR`.
 */
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadDuckDB } from '../src/formats/parquet/duckdb-sql.js';
import { exportRecording } from '../src/replay/export-run.js';
import { openStore } from '../src/store/open-store.js';
import { TrafficGenerator, type BenchSize } from './generator.js';
import { simrecPeer } from './peers/simrec.js';
import { median } from './stats.js';

export interface ParquetSpeed {
  samples: number;
  exportSeconds: number;
  exportSamplesPerSecond: number;
  parquetBytes: number;
  storeBytes: number;
  /** The aggregate: count, mean and max speed per actor over every state sample. */
  query: string;
  /** Median of three runs of the query. */
  queryMs: number;
}

const QUERY = 'SELECT actor, count(*), avg(speed), max(speed) FROM state GROUP BY actor';

export async function measureParquet(scratch: string, quick: boolean): Promise<ParquetSpeed> {
  const size: BenchSize = quick
    ? { actors: 20, steps: 300, hz: 100 }
    : { actors: 1000, steps: 10_000, hz: 100 };
  const dir = join(scratch, 'parquet');
  mkdirSync(dir, { recursive: true });
  await simrecPeer.record({ dir, frames: new TrafficGenerator(size), commitEverySteps: 100 });
  const storeFile = join(dir, 'bench.simrec.db');
  const store = await openStore(storeFile);
  const out = join(dir, 'tables');
  let exportSeconds: number;
  let details;
  try {
    const start = performance.now();
    details = await exportRecording(store, 'parquet', [1], out);
    exportSeconds = (performance.now() - start) / 1000;
  } finally {
    await store.close();
  }
  const samples = details.samples as number;
  const duckdb = await loadDuckDB();
  const connection = await (await duckdb.DuckDBInstance.create(':memory:')).connect();
  try {
    await connection.run(`CREATE VIEW state AS SELECT * FROM read_parquet('${join(out, 'state.parquet')}')`);
    const times: number[] = [];
    for (let rep = 0; rep < 3; rep++) {
      const start = performance.now();
      const rows = (await connection.runAndReadAll(QUERY)).getRows();
      times.push(performance.now() - start);
      if (rows.length !== size.actors) throw new Error(`bench parquet: ${rows.length} actors in the answer`);
    }
    return {
      samples,
      exportSeconds: Math.round(exportSeconds * 100) / 100,
      exportSamplesPerSecond: Math.round(samples / exportSeconds),
      parquetBytes: details.bytes as number,
      storeBytes: statSync(storeFile).size,
      query: QUERY,
      queryMs: Math.round(median(times) * 10) / 10,
    };
  } finally {
    connection.closeSync();
  }
}

export const formatParquet = (p: ParquetSpeed): string =>
  `parquet: export ${p.exportSamplesPerSecond} samples/s (${p.samples} samples in ${p.exportSeconds} s), ` +
  `${(p.parquetBytes / p.samples).toFixed(1)} bytes/sample (store: ${(p.storeBytes / p.samples).toFixed(1)}); ` +
  `DuckDB aggregate over every state sample in ${p.queryMs} ms (${p.query})`;
