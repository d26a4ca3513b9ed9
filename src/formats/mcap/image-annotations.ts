import { captureBoxes, type PerceptionCapture } from '../../model/perception.js';
import { isObject } from '../common/labelled-images/source-values.js';
import {
  keypointTemplates,
  keypointXY,
  type KeypointTemplate,
} from '../common/labelled-images/value-shapes.js';
import type { AnnotationDefinition } from '../../model/perception.js';
import { foxgloveTime } from './mcap-layout.js';

/*
 * A camera capture's labels as foxglove.ImageAnnotations, drawn over the capture's image in
 * Foxglove's image panel: each 2-D box a closed outline with its label above it, each instance's
 * keypoints the points its annotator saw (state > 0: occluded or visible), joined as its template's
 * skeleton says where both ends were seen. Pixels, y down, as the image: what simrec keeps
 * (model/perception.ts).
 */

const BOX_COLOUR = { r: 1, g: 0.55, b: 0, a: 1 };
const KEYPOINT_COLOUR = { r: 0.1, g: 0.9, b: 1, a: 1 };
const NONE = { r: 0, g: 0, b: 0, a: 0 };

/** The keypoint templates of a dataset's annotation definitions, by template id and by definition id. */
export function templatesOf(definitions: readonly AnnotationDefinition[]): Map<string, KeypointTemplate> {
  const templates = new Map<string, KeypointTemplate>();
  for (const def of definitions)
    if (def.kind === 'keypoints')
      for (const t of keypointTemplates(def)) {
        templates.set(t.id, t);
        if (!templates.has(def.id)) templates.set(def.id, t);
      }
  return templates;
}

/** The annotations message of a capture, or undefined when it has no boxes and no keypoints. */
export function imageAnnotations(
  capture: PerceptionCapture,
  templates: ReadonlyMap<string, KeypointTemplate> = new Map(),
): object | undefined {
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
      const byIndex = new Map<number, [number, number, number]>();
      v.keypoints.filter(isObject).forEach((k, i) => byIndex.set(Number(k.index ?? i), keypointXY(k)));
      const seen = [...byIndex.values()].filter(([, , state]) => state > 0);
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
      const template = templates.get(
        String(v.template_guid ?? v.template_id ?? a.extra?.templateId ?? a.definition),
      );
      const bones = [];
      for (const [from, to] of template?.skeleton ?? []) {
        const a = byIndex.get(from);
        const b = byIndex.get(to);
        if (a && b && a[2] > 0 && b[2] > 0) bones.push({ x: a[0], y: a[1] }, { x: b[0], y: b[1] });
      }
      if (bones.length)
        points.push({
          timestamp,
          type: 4, // LINE_LIST
          points: bones,
          outline_color: KEYPOINT_COLOUR,
          outline_colors: [],
          fill_color: NONE,
          thickness: 1.5,
        });
    }
  }
  return points.length ? { circles: [], points, texts } : undefined;
}
