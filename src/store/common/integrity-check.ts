import type { IntegrityProblem, IntegrityReport } from '../../model/store-port.js';
import type { EncodedBlock } from './chunk-codes.js';
import { ParsedChunk } from './chunk-decoder.js';
import { assembleChunk } from './chunk-encoder.js';
import { openChunk, type ChunkView } from './chunk-reader.js';

/*
 * `simrec check` for every backend: the rules of a sound store are written once, here; a backend only
 * lists what it holds and carries out the repairs (store-port.ts: checkIntegrity).
 */

/** A stream's counters as the backend keeps them. */
export interface StoredStream<StreamKey> {
  key: StreamKey;
  run: number;
  id: string;
  samples: number;
  begin: number | null;
  end: number | null;
}

/** A chunk as the backend keeps it: its bytes and what its row (or document) says of them. */
export interface StoredChunk<ChunkId> {
  id: ChunkId;
  begin: number;
  end: number;
  count: number;
  data: Uint8Array;
}

/** What the check asks of a backend: its own checks, what it holds, and the repairs. */
export interface IntegrityAccess<StreamKey, ChunkId> {
  /** The database's own check (SQLite's integrity_check and foreign keys), if it has one. */
  databaseProblems(): Promise<IntegrityProblem[]>;
  streams(): Promise<StoredStream<StreamKey>[]>;
  /** A stream's chunks in time order. */
  chunks(stream: StoredStream<StreamKey>): AsyncIterable<StoredChunk<ChunkId>>;
  runCount(): Promise<number>;
  /** Repairs, durable when they resolve. */
  replaceChunk(
    id: ChunkId,
    chunk: { data: Uint8Array; count: number; begin: number; end: number },
  ): Promise<void>;
  deleteChunk(id: ChunkId): Promise<void>;
  setCounters(
    stream: StoredStream<StreamKey>,
    counters: { samples: number; begin: number | null; end: number | null },
  ): Promise<void>;
  /** Forgets what the backend cached of the store, after repairs. */
  forgetCaches(): void;
}

/**
 * Checks every chunk (its checksums, that every block decodes, that it holds what its row says) and
 * every stream's counters against its chunks. With `repair`, a damaged chunk keeps its readable blocks
 * (each has its own checksum) or goes when none is readable, and counters are recomputed: nothing
 * readable is ever removed.
 */
export async function checkStoreIntegrity<StreamKey, ChunkId>(
  access: IntegrityAccess<StreamKey, ChunkId>,
  options: { repair?: boolean } = {},
): Promise<IntegrityReport> {
  const repair = options.repair === true;
  const problems: IntegrityProblem[] = await access.databaseProblems();
  const streams = await access.streams();
  let chunks = 0;
  let samples = 0;
  for (const s of streams) {
    const where = `run ${s.run} stream ${s.id}`;
    let count = 0;
    let begin: number | null = null;
    let end: number | null = null;
    for await (const chunk of access.chunks(s)) {
      chunks++;
      const chunkWhere = `${where} chunk ${String(chunk.id)}`;
      let kept: { count: number; begin: number; end: number } | null = chunk;
      try {
        const view = openChunk(chunk.data, chunkWhere);
        const batch = view.decodeAll();
        if (view.n !== chunk.count) throw new Error(`holds ${view.n} samples, its row says ${chunk.count}`);
        if (batch.t[0] !== chunk.begin || batch.t[view.n - 1] !== chunk.end)
          throw new Error('its time range disagrees with its row');
      } catch (error) {
        kept = null;
        if (repair) {
          const salvaged = salvageBlocks(chunk.data, chunkWhere);
          if (salvaged) {
            await access.replaceChunk(chunk.id, salvaged);
            kept = salvaged;
          } else await access.deleteChunk(chunk.id);
        }
        problems.push({
          where: chunkWhere,
          problem: `unreadable: ${(error as Error).message}${kept ? `; its readable blocks kept (${kept.count} of ${chunk.count} samples)` : ''}`,
          repaired: repair,
        });
        if (!kept) continue;
      }
      count += kept.count;
      begin ??= kept.begin;
      end = kept.end;
    }
    samples += count;
    if (count !== s.samples || (count > 0 && (begin !== s.begin || end !== s.end))) {
      problems.push({
        where,
        problem: `counters say ${s.samples} samples over [${s.begin}, ${s.end}], its chunks hold ${count} over [${begin}, ${end}]`,
        repaired: repair,
      });
      if (repair) await access.setCounters(s, { samples: count, begin, end });
    }
  }
  if (repair) access.forgetCaches();
  return {
    ok: problems.every((p) => p.repaired),
    runs: await access.runCount(),
    streams: streams.length,
    chunks,
    samples,
    problems,
  };
}

/**
 * A damaged chunk rebuilt from its readable blocks only (their checksums hold and they decode), or
 * null when nothing is readable (the frame itself is damaged, or every block, or a 0.1.0 chunk).
 */
function salvageBlocks(
  data: Uint8Array,
  where: string,
): { data: Uint8Array; count: number; begin: number; end: number } | null {
  let view: ChunkView;
  try {
    view = openChunk(data, where);
  } catch {
    return null;
  }
  if (!(view instanceof ParsedChunk)) return null;
  const good: EncodedBlock[] = [];
  for (let i = 0; i < view.blocks.length; i++)
    try {
      view.decodeBlock(i);
      good.push(view.encodedBlock(i));
    } catch {
      // the damaged block: left out
    }
  if (good.length === 0) return null;
  return {
    data: assembleChunk(view.columns, good),
    count: good.reduce((sum, b) => sum + b.rows, 0),
    begin: good[0]!.begin,
    end: good.at(-1)!.end,
  };
}
