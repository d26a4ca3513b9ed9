import type { IntegrityProblem, IntegrityReport } from '../../model/store-port.js';
import { checkStoreIntegrity } from '../common/integrity-check.js';
import { sealedChunkParts } from './sqlite-chunk-writer.js';
import { wholeChunkBytes } from './sqlite-chunk-rows.js';
import { SET_STREAM_COUNTS } from './sqlite-schema.js';
import type { Row, SqliteStoreFile } from './sqlite-store-file.js';

/**
 * `simrec check` on an SQLite store: SQLite's own checks of the file, then the rules every backend
 * shares (integrity-check.ts) over what its tables hold, repairs carried out on them.
 */
export async function checkSqliteIntegrity(
  file: SqliteStoreFile,
  options: { repair?: boolean },
): Promise<IntegrityReport> {
  const db = file.db;
  return checkStoreIntegrity<number, number>(
    {
      databaseProblems: async () => {
        const problems: IntegrityProblem[] = [];
        for (const row of db.pragma('integrity_check') as { integrity_check: string }[])
          if (row.integrity_check !== 'ok')
            problems.push({ where: 'database', problem: row.integrity_check, repaired: false });
        for (const row of db.pragma('foreign_key_check') as {
          table: string;
          rowid: number;
          parent: string;
        }[])
          problems.push({
            where: `${row.table} row ${row.rowid}`,
            problem: `refers to a missing ${row.parent} row`,
            repaired: false,
          });
        return problems;
      },
      streams: async () =>
        (
          file
            .stmt(
              `SELECT s.key, s.run_id, s.id, ${file.counters.columns} FROM streams s ${file.counters.join} ORDER BY s.key`,
            )
            .all() as Row[]
        ).map((r) => ({
          key: r.key as number,
          run: r.run_id as number,
          id: r.id as string,
          samples: r.samples as number,
          begin: r.begin_us as number | null,
          end: r.end_us as number | null,
        })),
      chunks: async function* (this: void, stream) {
        const rows = db
          .prepare(
            `SELECT id, begin_us, end_us, count, ${file.framesApart ? 'frame, ' : ''}data FROM chunks WHERE stream_key = ? ORDER BY begin_us, id`,
          )
          .all(stream.key) as Row[];
        for (const r of rows)
          yield {
            id: r.id as number,
            begin: r.begin_us as number,
            end: r.end_us as number,
            count: r.count as number,
            data: wholeChunkBytes(r),
          };
      },
      runCount: async () => (file.stmt('SELECT COUNT(*) AS n FROM runs').get() as Row).n as number,
      replaceChunk: async (id, chunk) => {
        if (file.framesApart)
          file
            .stmt('UPDATE chunks SET frame = ?, data = ?, count = ?, begin_us = ?, end_us = ? WHERE id = ?')
            .run(...sealedChunkParts(chunk.data), chunk.count, chunk.begin, chunk.end, id);
        else
          file
            .stmt('UPDATE chunks SET data = ?, count = ?, begin_us = ?, end_us = ? WHERE id = ?')
            .run(chunk.data, chunk.count, chunk.begin, chunk.end, id);
      },
      deleteChunk: async (id) => {
        file.stmt('DELETE FROM chunks WHERE id = ?').run(id);
      },
      setCounters: async (stream, c) => {
        file.stmt(SET_STREAM_COUNTS).run(stream.key, c.samples, c.begin, c.end);
      },
      forgetCaches: () => {
        file.lists.clear();
        file.indexes.clear();
        file.cache.clear();
      },
    },
    options,
  );
}
