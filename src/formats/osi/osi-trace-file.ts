import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { invalid, notFound } from '../../model/errors.js';

/*
 * OSI's own trace files (open-simulation-interface doc/architecture/trace_file_formats.adoc): `.osi`
 * is one message type's messages, each prefixed by its length (4 bytes, little-endian); the file's name
 * says what it holds: `<timestamp>_<type>_<osi version>_<protobuf version>_<frames>_<name>.osi`, the
 * type `sv` (SensorView), `gt` (GroundTruth), `sd` (SensorData)...
 */

export type TraceType = 'sv' | 'gt';

export interface TraceName {
  timestamp: string;
  type: string;
  osiVersion: string;
  protobufVersion: string;
  frames: number;
  name: string;
}

/** The parts of a name that follows OSI's convention, else undefined. */
export function parseTraceName(file: string): TraceName | undefined {
  const m = /^(\d{8}T\d{6}Z)_([a-z]+)_(\d+\.\d+\.\d+)_(\d+\.\d+\.\d+)_(\d+)_(.*)\.osi$/.exec(basename(file));
  if (!m) return undefined;
  return {
    timestamp: m[1]!,
    type: m[2]!,
    osiVersion: m[3]!,
    protobufVersion: m[4]!,
    frames: Number(m[5]),
    name: m[6]!,
  };
}

/** A name by OSI's convention: `20261202T011552Z_gt_3.8.0_8.0.0_1201_run-3.osi`. */
export function formatTraceName(name: Omit<TraceName, 'timestamp'> & { begin: number }): string {
  const timestamp = new Date(Math.floor(name.begin / 1000)).toISOString().replace(/[-:]|\.\d+/g, '');
  const safe = name.name.replace(/[^A-Za-z0-9.-]+/g, '-');
  return `${timestamp}_${name.type}_${name.osiVersion}_${name.protobufVersion}_${name.frames}_${safe}.osi`;
}

/** Each message of a length-prefixed trace, with its byte offset, read a message at a time. */
export async function* traceMessages(
  file: string,
): AsyncGenerator<{ data: Uint8Array; offset: number; index: number }> {
  const size = await stat(file).then(
    (s) => s.size,
    (error: NodeJS.ErrnoException) => {
      throw error.code === 'ENOENT' ? notFound(`${file}: no such file`) : error;
    },
  );
  const handle = await open(file, 'r');
  try {
    const prefix = Buffer.alloc(4);
    let offset = 0;
    for (let index = 0; offset < size; index++) {
      if (size - offset < 4)
        throw invalid(
          `${file}: message ${index} at byte ${offset}: ${size - offset} bytes left, less than its 4-byte length: the file is cut short`,
        );
      await handle.read(prefix, 0, 4, offset);
      const length = prefix.readUInt32LE(0);
      if (length > size - offset - 4)
        throw invalid(
          `${file}: message ${index} at byte ${offset}: its length says ${length} bytes, ${size - offset - 4} are left: the file is cut short (or is no length-prefixed OSI trace)`,
        );
      const data = Buffer.alloc(length);
      await handle.read(data, 0, length, offset + 4);
      yield { data, offset, index };
      offset += 4 + length;
    }
  } finally {
    await handle.close();
  }
}
