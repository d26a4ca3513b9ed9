import { basename } from 'node:path';
import type protobuf from 'protobufjs';
import { invalid } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { RunSink, RunTarget } from '../../model/run-ports.js';
import type { RunInfo } from '../../model/run.js';
import { STATE_FIELDS, STATE_STREAM } from '../../model/standard-streams.js';
import { keepRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { OsiRoadCollector, type OsiRoadMessage } from '../common/osi3/osi-lanes.js';
import { PendingSamples } from '../common/pending-samples.js';
import { groundTruthObjects, worldOf, type SensorViewMessage } from '../common/osi3/osi-objects.js';
import { ReadingTypes, SkimmingTypes } from '../common/osi3/osi3-schema.js';
import { parseTraceName, traceFileMessages, type TraceType } from './osi-trace-file.js';

export interface OsiImportResult {
  run: RunInfo;
  messages: number;
  type: TraceType;
}

/** Whether a message reads as a SensorView holding a world (a GroundTruth's bytes do not). */
function isSensorView(data: Uint8Array): boolean {
  try {
    return Boolean(ReadingTypes.sv.decode(data).toJSON().global_ground_truth);
  } catch {
    return false;
  }
}

function decodeMessage(T: protobuf.Type, data: Uint8Array, where: string): JsonObject {
  try {
    return T.toObject(T.decode(data), { longs: Number, enums: String, defaults: false, arrays: true });
  } catch (error) {
    throw invalid(`${where}: not an ${T.fullName.slice(1)} message (${(error as Error).message})`);
  }
}

const micros = (ts: { seconds?: number; nanos?: number } | null | undefined): number | undefined =>
  ts ? (ts.seconds ?? 0) * 1e6 + Math.round((ts.nanos ?? 0) / 1000) : undefined;

/**
 * Reads an OSI trace file (`.osi`: length-prefixed GroundTruth or SensorView messages; `.txth`: the
 * same in protobuf's text format) as a run, a
 * message at a time, mapped as an MCAP trace's OSI channel is (osi-objects.ts). A .osi file carries no
 * schema: its messages are decoded with the OSI fields simrec knows (osi3-schema.ts: positions, sizes,
 * orientations, velocities, types), and its type is read from its name by OSI's naming convention
 * (`..._sv_...` or `..._gt_...`), else found from its first message.
 */
export async function importOsi(
  into: RunTarget,
  file: string,
  options: { warn?: (message: string) => void; signal?: AbortSignal } = {},
): Promise<OsiImportResult> {
  const named = parseTraceName(file);
  if (named && named.type !== 'sv' && named.type !== 'gt')
    throw invalid(
      `${file}: an OSI trace of ${named.type} messages; simrec reads sv (SensorView) and gt (GroundTruth) traces`,
    );
  let type: TraceType | undefined = named?.type as TraceType | undefined;
  let sink: RunSink | undefined;
  let present: string[] = [];
  const declared = new Set<string>();
  const road = new OsiRoadCollector();
  let pending: PendingSamples | undefined;
  let messages = 0;
  let last = 0;
  for await (const { data, index, where } of traceFileMessages(file, type)) {
    options.signal?.throwIfAborted();
    // Unnamed: a SensorView holds its world in field 7 (a GroundTruth has no such message field).
    type ??= isSensorView(data) ? 'sv' : 'gt';
    // Read with its road's lanes as ids only, and again whole when it brings a lane not seen before.
    const decoded = decodeMessage(SkimmingTypes[type], data, where);
    const view = decoded as SensorViewMessage;
    const gt = worldOf(decoded, type === 'sv', where);
    const t = micros(gt.timestamp) ?? micros(view.timestamp) ?? index;
    if (t < last)
      throw invalid(`${where}: its timestamp ${t} us goes back (the message before was at ${last} us)`);
    sink ??= await into.beginRun({
      simulator: { name: 'osi' },
      description: `OSI trace ${basename(file)}`,
      begin: t,
      metadata: {
        osi: { file: basename(file), type, ...(named ? { name: named as unknown as JsonObject } : {}) },
      },
    });
    pending ??= new PendingSamples(sink);
    const host = gt.host_vehicle_id?.value ?? view.host_vehicle_id?.value;
    const seen = new Set<string>();
    for (const object of groundTruthObjects(gt, host)) {
      seen.add(object.id);
      if (!declared.has(object.id)) {
        declared.add(object.id);
        await sink.declareActors([
          {
            id: object.id,
            kind: object.kind,
            attributes: object.attributes,
            ...(object.size
              ? { extents: { length: object.size.x, width: object.size.y, height: object.size.z } }
              : {}),
          },
        ]);
        await sink.declareStreams([{ name: STATE_STREAM, actor: object.id, fields: STATE_FIELDS }]);
      }
      pending.push(`${object.id}/${STATE_STREAM}`, { t, step: index, ...object.state });
    }
    // An object absent from a message has left at it: what came before is appended first.
    const gone = present.filter((id) => !seen.has(id));
    if (pending.full || gone.length) await pending.flush();
    for (const id of gone) await sink.leave(id, t);
    present = [...seen];
    if (!road.knows(gt as OsiRoadMessage))
      road.add(
        worldOf(decodeMessage(ReadingTypes[type], data, where), type === 'sv', where) as OsiRoadMessage,
      );
    messages++;
    last = t;
  }
  if (!sink) throw invalid(`${file}: no message: an empty OSI trace`);
  await pending!.flush();
  const network = road.network(options.warn);
  if (network) await keepRoadNetwork(sink, network);
  const run = await sink.end('completed', { end: last });
  return { run, messages, type: type! };
}
