import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { createInterface } from 'node:readline';
import { invalid, notFound } from '../../model/errors.js';
import { ReadingTypes } from '../common/osi3/osi3-schema.js';
import { parseTextFormat } from './text-format.js';

/*
 * OSI's own trace files (open-simulation-interface doc/architecture/trace_file_formats.adoc): `.osi`
 * is one message type's messages, each prefixed by its length (4 bytes, little-endian); `.txth` the
 * same messages in protobuf's text format, one after another, each beginning with the line the first
 * one begins with (as asam-osi-utilities' TXTH reader finds them). The file's name says what it holds:
 * `<timestamp>_<type>_<osi version>_<protobuf version>_<frames>_<name>.osi` (or `.txth`), the type
 * `sv` (SensorView), `gt` (GroundTruth), `sd` (SensorData)...
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
  const m = /^(\d{8}T\d{6}Z)_([a-z]+)_(\d+\.\d+\.\d+)_(\d+\.\d+\.\d+)_(\d+)_(.*)\.(?:osi|txth)$/.exec(
    basename(file),
  );
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

/**
 * Whether a trace file is the text form (`.txth`), by its name (an export writes to a temporary sibling,
 * `.NAME.txth.partial-PID`, renamed when whole).
 */
export const isTextTrace = (file: string): boolean => /\.txth(?:\.partial-\d+)?$/i.test(file);

/** A name by OSI's convention: `20261202T011552Z_gt_3.8.0_8.0.0_1201_run-3.osi` (or `.txth`). */
export function formatTraceName(
  name: Omit<TraceName, 'timestamp'> & { begin: number; extension?: string },
): string {
  const timestamp = new Date(Math.floor(name.begin / 1000)).toISOString().replace(/[-:]|\.\d+/g, '');
  const safe = name.name.replace(/[^A-Za-z0-9.-]+/g, '-');
  return `${timestamp}_${name.type}_${name.osiVersion}_${name.protobufVersion}_${name.frames}_${safe}.${name.extension ?? 'osi'}`;
}

/** A message of a trace file: its bytes, its place in the file, and where it is, for errors. */
export interface TraceMessage {
  data: Uint8Array;
  index: number;
  where: string;
}

/** Each message of a trace file, `.osi` or `.txth` by its name, read a message at a time. */
export function traceFileMessages(file: string, type: TraceType | undefined): AsyncGenerator<TraceMessage> {
  return isTextTrace(file) ? textTraceMessages(file, type) : traceMessages(file);
}

/** Each message of a length-prefixed trace, with its byte offset, read a message at a time. */
export async function* traceMessages(file: string): AsyncGenerator<TraceMessage> {
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
      yield { data, index, where: `${file}: message ${index} at byte ${offset}` };
      offset += 4 + length;
    }
  } finally {
    await handle.close();
  }
}

/**
 * Each message of a text trace (`.txth`), encoded as the binary form has it: a message is the lines from
 * one that repeats the file's first line to the next. The type, when the name does not say it, is
 * SensorView where the first message holds `global_ground_truth`, else GroundTruth.
 */
async function* textTraceMessages(file: string, named: TraceType | undefined): AsyncGenerator<TraceMessage> {
  await stat(file).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ENOENT' ? notFound(`${file}: no such file`) : error;
  });
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  let first: string | undefined;
  let text: string[] = [];
  let startLine = 1;
  let lineNumber = 0;
  let index = 0;
  let type = named;
  const message = (): TraceMessage => {
    const body = text.join('\n');
    type ??= /^global_ground_truth\s*[{<:]/m.test(body) ? 'sv' : 'gt';
    const where = `${file}: message ${index} at line ${startLine}`;
    const T = ReadingTypes[type];
    const object = parseTextFormat(T, body, where, startLine);
    return { data: T.encode(T.fromObject(object)).finish(), index: index++, where };
  };
  for await (const line of lines) {
    lineNumber++;
    if (first === undefined) {
      if (line.trim() === '') continue;
      first = line;
      startLine = lineNumber;
    } else if (line === first) {
      yield message();
      text = [];
      startLine = lineNumber;
    }
    text.push(line);
  }
  if (first !== undefined) yield message();
}
