/**
 * How a DI-drive episode is kept in a run, beside the canonical streams: what the exporter looks for
 * to write an imported episode back byte for byte.
 */
import type { ActorInfo } from '../../model/run.js';
import type { StreamDecl } from '../../model/stream.js';
import type { MeasurementLayout } from './didrive-layout.js';

/** `<ego>/didrive`: the measurement vector as the LMDB held it, with its frame index. */
export const DIDRIVE_STREAM = 'didrive';
/** Every LMDB value other than len and measurements (birdview, lidar, `others` keys), by key. */
export const LMDB_VALUE_PREFIX = 'didrive/lmdb/';
/** Files of the episode folder that are neither metadata, LMDB nor camera frames (CICT's .npy...). */
export const EXTRA_FILE_PREFIX = 'didrive/files/';
export const IMAGE_PREFIX = 'didrive/images/';
/** The metadata files' text, as read, so an export writes the same bytes. */
export const METAINFO_ATTACHMENT = 'didrive/metainfo.json';
export const EPISODE_METAINFO_ATTACHMENT = 'didrive/episode_metainfo.json';
/** Run metadata key for what the import found. */
export const RUN_METADATA_KEY = 'didrive';
export const EGO_ID = 'hero';

export const didriveStreamDecl = (ego: string, layout: MeasurementLayout): StreamDecl => ({
  name: DIDRIVE_STREAM,
  actor: ego,
  rateHz: 10,
  fields: [
    {
      name: 'frame',
      type: 'i32',
      description: 'index in the episode (%05d in the LMDB keys and file names)',
    },
    {
      name: 'measurements',
      type: 'vec',
      length: layout.length,
      description: 'the float32 vector as stored, CARLA frame (left-handed, m, km/h)',
    },
    {
      name: 'command',
      type: 'i32',
      description: 'RoadOption: -1 void, 1 left, 2 right, 3 straight, 4 follow, 5/6 change lane',
    },
    { name: 'tl_state', type: 'i32', description: '0 red, 1 yellow, 2 green, 3 off' },
    { name: 'tl_dis', type: 'f64', unit: 'm' },
  ],
  metadata: { model: 'didrive.measurements', layout: layout.length === 29 ? 'cict' : 'standard' },
});

const safeName = (id: string): string => id.replace(/[^A-Za-z0-9_.-]+/g, '_');

/**
 * The DI-drive obs name of a camera actor: the one it was imported with, else `rgb` for a run's only
 * camera (what the LBC and CILRS loaders look for), else `rgb_<actor id>`.
 */
export function obsNameOf(camera: ActorInfo, cameras: number): string {
  const kept = (camera.attributes[RUN_METADATA_KEY] as { obs?: unknown } | undefined)?.obs;
  if (typeof kept === 'string' && kept !== '') return kept;
  return cameras === 1 ? 'rgb' : `rgb_${safeName(camera.id)}`;
}
