import { STATE_STREAM } from '../../model/standard-streams.js';
import type { StreamInfo } from '../../model/stream.js';
import { annotationsTopic, MAP_TOPIC, SCENE_TOPIC, streamTopic, trajectoryTopic } from './mcap-layout.js';

/**
 * A Foxglove/Lichtblick layout to open beside the export (Layouts > Import from file): the 3D panel
 * on the scene and the map following the ego, a plot of the ego's speed, the events as a log, the
 * first camera's images, and a map of the earth following the ego when the run is geo-referenced. Panel ids and keys are those of Foxglove's own layout files.
 */
export function foxgloveLayout(
  streams: readonly StreamInfo[],
  cameras: Iterable<string>,
  /** The LocationFix topic the map panel follows, when the run is geo-referenced. */
  location?: string,
  /** Cameras whose captures have 2-D boxes or keypoints (drawn over their images). */
  labelled: Iterable<string> = [],
  /** Cameras with a calibration channel (the image panel projects the scene with it). */
  calibrated: Iterable<string> = [],
): object {
  const egoState = streams.find((s) => s.name === STATE_STREAM && s.actor !== null && /ego/i.test(s.actor));
  const state = egoState ?? streams.find((s) => s.name === STATE_STREAM);
  const camera = [...cameras][0];
  const configById: Record<string, object> = {
    '3D!simrec': {
      ...(egoState ? { followTf: egoState.actor } : {}),
      topics: {
        [SCENE_TOPIC]: { visible: true },
        [MAP_TOPIC]: { visible: true },
        ...(egoState ? { [trajectoryTopic(egoState.actor!)]: { visible: true, type: 'line' } } : {}),
      },
      layers: { grid: { visible: false, layerId: 'foxglove.Grid' } },
    },
    'Plot!simrec': {
      paths: state
        ? ['speed', 'accel']
            .filter((f) => state.fields.some((d) => d.name === f))
            .map((f) => ({
              value: `${streamTopic(state.id)}.${f}`,
              enabled: true,
              timestampMethod: 'receiveTime',
            }))
        : [],
      showLegend: true,
    },
    'RosOut!simrec': { searchTerms: [], minLogLevel: 1 },
    ...(location
      ? { 'map!simrec': { followTopic: location, layer: 'map', disabledTopics: [], zoomLevel: 17 } }
      : {}),
    ...(camera
      ? {
          'Image!simrec': {
            imageMode: {
              imageTopic: streamTopic(`${camera}/image`),
              ...([...calibrated].includes(camera)
                ? { calibrationTopic: streamTopic(`${camera}/calibration`) }
                : {}),
              ...([...labelled].includes(camera)
                ? { annotations: { [annotationsTopic(camera)]: { visible: true } } }
                : {}),
            },
          },
        }
      : {}),
  };
  const below = camera
    ? { direction: 'column', first: 'Image!simrec', second: 'RosOut!simrec', splitPercentage: 60 }
    : 'RosOut!simrec';
  const side = {
    direction: 'column',
    first: 'Plot!simrec',
    second: location
      ? { direction: 'column', first: 'map!simrec', second: below, splitPercentage: 50 }
      : below,
    splitPercentage: 50,
  };
  return {
    configById,
    globalVariables: {},
    userNodes: {},
    playbackConfig: { speed: 1 },
    layout: { direction: 'row', first: '3D!simrec', second: side, splitPercentage: 65 },
  };
}
