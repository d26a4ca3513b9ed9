import { invalid, notFound } from '../model/errors.js';
import {
  ROAD_NETWORK_FORMATS,
  summarizeRoadNetwork,
  validateRoadNetwork,
  type RoadNetwork,
} from '../model/roadnet.js';
import type { Attachment } from '../model/attachment.js';
import type { StoreBackend } from '../model/store-port.js';

/** Where a road network is kept: a run being written (a RunSink), or a stored run. */
export interface AttachmentSink {
  attach(attachment: Attachment): Promise<void>;
}
/** Where a road network is read from: a RunSource, or a stored run. */
export interface AttachmentSource {
  attachment(name: string): Promise<Attachment | undefined>;
}

/** The model, as JSON, without the source text (that is its own attachment). */
export const ROADNET_ATTACHMENT = 'roadnet/network.json';
export const ROADNET_MEDIA_TYPE = 'application/vnd.simrec.roadnet+json';

/**
 * The original file, byte for byte as text: what LimSim and SODA.Sim keep beside a recording. An OSI
 * trace has no road file: its source is the trace's lanes and lane boundaries, as JSON.
 */
export const ROADNET_SOURCE = {
  sumo: 'roadnet/source.net.xml',
  opendrive: 'roadnet/source.xodr',
  osi: 'roadnet/source.osi.json',
} as const;
const SOURCE_MEDIA_TYPE = {
  sumo: 'application/xml',
  opendrive: 'application/vnd.asam.opendrive+xml',
  osi: 'application/json',
} as const;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Keeps a road network with a run, as two attachments: the model (JSON) and the source text. A run
 * has one road network; attaching another replaces it.
 */
export async function attachRoadNetwork(store: StoreBackend, runId: number, net: RoadNetwork): Promise<void> {
  if (!(await store.getRun(runId))) throw notFound(`run ${runId}: no such run`);
  await keepRoadNetwork({ attach: (a) => store.putAttachment(runId, a) }, net);
}

/** attachRoadNetwork for a run being written (a reader's RunSink). */
export async function keepRoadNetwork(sink: AttachmentSink, net: RoadNetwork): Promise<void> {
  validateRoadNetwork(net);
  const { source, ...model } = net;
  const summary = summarizeRoadNetwork(net);
  await sink.attach({
    name: ROADNET_SOURCE[source.format],
    mediaType: SOURCE_MEDIA_TYPE[source.format],
    data: encoder.encode(source.text),
  });
  // Written last: a reader that finds the model also finds its source.
  await sink.attach({
    name: ROADNET_ATTACHMENT,
    mediaType: ROADNET_MEDIA_TYPE,
    data: encoder.encode(JSON.stringify(model)),
    metadata: {
      format: net.format,
      source: ROADNET_SOURCE[source.format],
      lanes: summary.lanes,
      edges: summary.edges,
      junctions: summary.junctions,
      totalLaneLength: summary.totalLaneLength,
    },
  });
}

/** The road network kept with a run, or undefined if it has none. */
export async function loadRoadNetwork(store: StoreBackend, runId: number): Promise<RoadNetwork | undefined> {
  return readRoadNetwork({ attachment: (name) => store.getAttachment(runId, name) }, runId);
}

/** loadRoadNetwork from a writer's RunSource (or anything that hands out a run's attachments). */
export async function readRoadNetwork(
  from: AttachmentSource,
  runId: number,
): Promise<RoadNetwork | undefined> {
  const attachment = await from.attachment(ROADNET_ATTACHMENT);
  if (!attachment) return undefined;
  const where = `run ${runId} attachment ${ROADNET_ATTACHMENT}`;
  let model: Omit<RoadNetwork, 'source'>;
  try {
    model = JSON.parse(decoder.decode(attachment.data)) as Omit<RoadNetwork, 'source'>;
  } catch (error) {
    throw invalid(`${where}: not JSON: ${(error as Error).message}`);
  }
  const format = model?.format;
  if (!(ROAD_NETWORK_FORMATS as readonly unknown[]).includes(format))
    throw invalid(`${where}.format: expected one of ${ROAD_NETWORK_FORMATS.join(', ')}`);
  const sourceName = ROADNET_SOURCE[format];
  const source = await from.attachment(sourceName);
  if (!source) throw invalid(`${where}: its source attachment ${sourceName} is missing`);
  return validateRoadNetwork({
    ...model,
    source: { format: format, text: decoder.decode(source.data) },
  });
}
