import { captureBoxes, type PerceptionCapture } from '../../model/perception.js';
import { isObject } from '../perception/source-values.js';
import { keypointXY } from '../perception/value-shapes.js';
import { foxgloveTime } from './mcap-layout.js';

/*
 * A camera capture's labels as foxglove.ImageAnnotations, drawn over the capture's image in
 * Foxglove's image panel: each 2-D box a closed outline with its label above it, each instance's
 * keypoints the points its annotator saw (state > 0: occluded or visible). Pixels, y down, as the
 * image: what simrec keeps (model/perception.ts).
 */

const BOX_COLOUR = { r: 1, g: 0.55, b: 0, a: 1 };
const KEYPOINT_COLOUR = { r: 0.1, g: 0.9, b: 1, a: 1 };
const NONE = { r: 0, g: 0, b: 0, a: 0 };

/** The annotations message of a capture, or undefined when it has no boxes and no keypoints. */
export function imageAnnotations(capture: PerceptionCapture): object | undefined {
  const timestamp = foxgloveTime(capture.t);
  const points = [];
  const texts = [];
  for (const box of captureBoxes(capture)) {
    points.push({
      timestamp,
      type: 2, // LINE_LOOP
      points: [
        { x: box.x, y: box.y },
        { x: box.x + box.width, y: box.y },
        { x: box.x + box.width, y: box.y + box.height },
        { x: box.x, y: box.y + box.height },
      ],
      outline_color: BOX_COLOUR,
      outline_colors: [],
      fill_color: NONE,
      thickness: 2,
    });
    if (box.label)
      texts.push({
        timestamp,
        position: { x: box.x, y: box.y - 4 },
        text: box.instanceId === undefined ? box.label : `${box.label} ${String(box.instanceId)}`,
        font_size: 12,
        text_color: BOX_COLOUR,
        background_color: { r: 0, g: 0, b: 0, a: 0.6 },
      });
  }
  for (const a of capture.annotations) {
    if (a.kind !== 'keypoints' || !a.values) continue;
    for (const v of a.values) {
      if (!isObject(v) || !Array.isArray(v.keypoints)) continue;
      const seen = v.keypoints
        .filter(isObject)
        .map(keypointXY)
        .filter(([, , state]) => state > 0);
      if (seen.length)
        points.push({
          timestamp,
          type: 1, // POINTS
          points: seen.map(([x, y]) => ({ x, y })),
          outline_color: KEYPOINT_COLOUR,
          outline_colors: [],
          fill_color: KEYPOINT_COLOUR,
          thickness: 4,
        });
    }
  }
  return points.length ? { circles: [], points, texts } : undefined;
}
