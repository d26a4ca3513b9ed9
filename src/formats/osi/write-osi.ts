import { open } from 'node:fs/promises';
import type { RunSource } from '../../model/run-ports.js';
import { StreamWalk } from '../../model/sample-series.js';
import { STATE_STREAM } from '../../model/standard-streams.js';
import { readRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { osiGroundTruth } from '../common/osi3/osi-ground-truth.js';
import { GroundTruthType, OSI_VERSION_TEXT, PROTOBUF_VERSION } from '../common/osi3/osi3-schema.js';
import { frameTimes, lightTracks, stateTracks } from '../common/scene-tracks.js';
import { formatTraceName, isTextTrace } from './osi-trace-file.js';
import { printTextFormat } from './text-format.js';

/**
 * Writes a run as an OSI trace file: the GroundTruth of each recorded frame (what `simrec export RUN
 * mcap --osi` puts on its OSI channel), each prefixed by its length, or, to a `.txth` file, each in
 * protobuf's text format. Returns the name OSI's convention gives such a file, for the caller to name it
 * by.
 */
export async function exportOsi(
  source: RunSource,
  file: string,
  options: {
    warn?: (message: string) => void;
    onProgress?: (done: number, total: number) => void;
    signal?: AbortSignal;
  } = {},
): Promise<{ frames: number; bytes: number; conventionalName: string }> {
  const warn = options.warn ?? (() => {});
  const { run } = source;
  const [actors, streams] = await Promise.all([source.actors(), source.streams()]);
  const byId = new Map(streams.map((s) => [s.id, s] as const));
  const walked = streams.filter((s) => s.name === STATE_STREAM || s.name === 'signal');
  const { walk, series } = await StreamWalk.over(source, walked);
  const network = await readRoadNetwork(source, run.id);
  const tracks = stateTracks(actors, byId, series);
  const lights = lightTracks(actors, byId, series, network);
  const osi = osiGroundTruth(run, tracks, lights, network, warn);
  const frames = frameTimes(tracks);
  const text = isTextTrace(file);
  const handle = await open(file, 'w');
  let bytes = 0;
  try {
    const prefix = Buffer.alloc(4);
    for (const [i, t] of frames.entries()) {
      options.signal?.throwIfAborted();
      await walk.advanceTo(t);
      const data = osi.encode(t);
      if (text) {
        const message = GroundTruthType.toObject(GroundTruthType.decode(data), {
          longs: String,
          enums: String,
          arrays: false,
          defaults: false,
        });
        const written = Buffer.from(printTextFormat(GroundTruthType, message), 'utf8');
        await handle.write(written);
        bytes += written.length;
      } else {
        prefix.writeUInt32LE(data.length, 0);
        await handle.write(prefix);
        await handle.write(data);
        bytes += 4 + data.length;
      }
      if (i % 256 === 0) options.onProgress?.(i, frames.length);
    }
    options.onProgress?.(frames.length, frames.length);
  } finally {
    await handle.close();
  }
  const conventionalName = formatTraceName({
    begin: run.begin,
    type: 'gt',
    osiVersion: OSI_VERSION_TEXT,
    protobufVersion: PROTOBUF_VERSION,
    frames: frames.length,
    name: `run-${run.id}`,
    extension: text ? 'txth' : 'osi',
  });
  return { frames: frames.length, bytes, conventionalName };
}
