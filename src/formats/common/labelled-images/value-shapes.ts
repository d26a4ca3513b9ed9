/**
 * The two shapes Perception's values come in, and the conversions between them. The legacy writer
 * (≤ 0.9) and SOLO (1.0) describe the same labelers differently: snake_case against camelCase,
 * colours as `{r, g, b, a}` objects against `[r, g, b, a]` arrays, keypoints at `x, y` against
 * `location: [x, y]`, a keypoint template in a definition's `spec` against its `template`, definitions
 * named by what they are ("bounding box", "keypoints") against ids and `@type`s. The model keeps
 * whatever shape its source had (2D boxes aside, see model/perception.ts), so each exporter converts
 * here what came from the other layout: datasetinsights reads only the legacy shapes (it looks for
 * `label_id`, a definition named "keypoints", dicts in `values`), pysolotools only SOLO's.
 */
import type { JsonObject, JsonValue } from '../../../model/json.js';
import type { AnnotationDefinition, AnnotationKind, MetricDefinition } from '../../../model/perception.js';
import { isObject } from './source-values.js';

// ---- colours -------------------------------------------------------------------------------------

const CHANNELS = ['r', 'g', 'b', 'a'] as const;

/** SOLO's `[r, g, b, a]` (bytes) as the legacy `{r, g, b, a}`; `unit` scales to 0..1 (Unity Color). */
export function colourObject(v: JsonValue | undefined, unit: boolean): JsonValue | undefined {
  if (!Array.isArray(v) || v.length < 3 || !v.every((x) => typeof x === 'number')) return v;
  const values = v;
  return Object.fromEntries(
    CHANNELS.map((c, i) => [c, unit ? (values[i] ?? 255) / 255 : (values[i] ?? 255)] as const),
  );
}

/** The legacy `{r, g, b, a}` as SOLO's `[r, g, b, a]` bytes; 0..1 floats (Unity Color) are scaled. */
export function colourArray(v: JsonValue | undefined): JsonValue | undefined {
  if (!isObject(v) || !CHANNELS.slice(0, 3).every((c) => typeof v[c] === 'number')) return v;
  const values = CHANNELS.map((c) => (typeof v[c] === 'number' ? v[c] : 1));
  const unit = values.every((x) => x <= 1);
  return values.map((x) => (unit ? Math.round(x * 255) : x));
}

// ---- keys ------------------------------------------------------------------------------------------

export const snakeCase = (key: string): string => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
export const camelCase = (key: string): string =>
  key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** An object's keys renamed (one level); values are kept. */
export function renameKeys(v: JsonValue, rename: (key: string) => string): JsonValue {
  if (!isObject(v)) return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [rename(k), x] as const));
}

// ---- definitions -----------------------------------------------------------------------------------

/** The names the legacy writer gives its labelers' definitions: what datasetinsights finds them by. */
export const LEGACY_ANNOTATION_NAMES: Partial<Record<AnnotationKind, string>> = {
  bbox2d: 'bounding box',
  bbox3d: 'bounding box 3D',
  semantic_segmentation: 'semantic segmentation',
  instance_segmentation: 'instance segmentation',
  keypoints: 'keypoints',
};

/** SOLO's `@type` per kind, for a definition or annotation that came from the legacy layout. */
export const SOLO_ANNOTATION_TYPES: Partial<Record<AnnotationKind, string>> = {
  bbox2d: 'type.unity.com/unity.solo.BoundingBox2DAnnotation',
  bbox3d: 'type.unity.com/unity.solo.BoundingBox3DAnnotation',
  semantic_segmentation: 'type.unity.com/unity.solo.SemanticSegmentationAnnotation',
  instance_segmentation: 'type.unity.com/unity.solo.InstanceSegmentationAnnotation',
  keypoints: 'type.unity.com/unity.solo.KeypointAnnotation',
};

/** Legacy metric names by SOLO metric `@type`, and back. */
const METRIC_NAMES: [RegExp, string, string][] = [
  [/ObjectCountMetric$/, 'object count', 'type.unity.com/unity.solo.ObjectCountMetric'],
  [/RenderedObjectInfoMetric$/, 'rendered object info', 'type.unity.com/unity.solo.RenderedObjectInfoMetric'],
];

export type MetricKind = 'object_count' | 'rendered_object_info' | 'generic';

/** What a metric definition counts, from its SOLO `@type` or its legacy name. */
export function metricKind(def: MetricDefinition | undefined): MetricKind {
  if (!def) return 'generic';
  const type = typeof def.extra?.['@type'] === 'string' ? def.extra['@type'] : '';
  const name = def.name.toLowerCase();
  if (/ObjectCountMetric$/.test(type) || name === 'object count' || def.id === 'ObjectCount')
    return 'object_count';
  if (
    /RenderedObjectInfoMetric$/.test(type) ||
    name === 'rendered object info' ||
    def.id === 'RenderedObjectInfo'
  )
    return 'rendered_object_info';
  return 'generic';
}

export const soloMetricType = (def: MetricDefinition | undefined): string =>
  def?.extra?.['@type'] !== undefined
    ? String(def.extra['@type'])
    : (METRIC_NAMES.find(([, name]) => name === def?.name.toLowerCase())?.[2] ??
      'type.unity.com/unity.solo.GenericMetric');

/** The labels of the first definition that has a label spec (SOLO's label config is per labeler). */
export function labelSpec(definitions: readonly AnnotationDefinition[]): JsonValue[] | undefined {
  for (const d of definitions)
    if (d.spec?.length && d.spec.every((s) => isObject(s) && 'label_id' in s)) return d.spec;
  return undefined;
}

/**
 * A SOLO keypoint `template` as the legacy definition's `spec` entry: `template_id`, `template_name`,
 * `key_points` with `{r,g,b,a}` colours in 0..1, `skeleton` likewise.
 */
export function legacyKeypointTemplate(template: JsonObject): JsonObject {
  const points = Array.isArray(template.keypoints) ? template.keypoints.filter(isObject) : [];
  const skeleton = Array.isArray(template.skeleton) ? template.skeleton.filter(isObject) : [];
  return {
    template_id: template.templateId ?? null,
    template_name: template.templateName ?? null,
    key_points: points.map((p) => ({
      label: p.label ?? null,
      index: p.index ?? null,
      color: colourObject(p.color, true) ?? null,
    })),
    skeleton: skeleton.map((s) => ({
      joint1: s.joint1 ?? null,
      joint2: s.joint2 ?? null,
      color: colourObject(s.color, true) ?? null,
    })),
  };
}

/** The legacy `spec` entry as SOLO's `template`. */
export function soloKeypointTemplate(spec: JsonObject): JsonObject {
  const points = Array.isArray(spec.key_points) ? spec.key_points.filter(isObject) : [];
  const skeleton = Array.isArray(spec.skeleton) ? spec.skeleton.filter(isObject) : [];
  return {
    templateId: spec.template_id ?? null,
    templateName: spec.template_name ?? null,
    keypoints: points.map((p) => ({
      label: p.label ?? null,
      index: p.index ?? null,
      color: colourArray(p.color) ?? null,
    })),
    skeleton: skeleton.map((s) => ({
      joint1: s.joint1 ?? null,
      joint2: s.joint2 ?? null,
      color: colourArray(s.color) ?? null,
    })),
  };
}

/**
 * A keypoint template of a definition, whichever layout it came from: names in index order and the
 * skeleton's joint pairs (0-based, as both layouts number them).
 */
export interface KeypointTemplate {
  id: string;
  name: string;
  names: string[];
  skeleton: [number, number][];
}

export function keypointTemplates(def: AnnotationDefinition): KeypointTemplate[] {
  const legacy = (def.spec ?? []).filter(isObject).filter((t) => Array.isArray(t.key_points));
  const solo = isObject(def.extra?.template) ? [legacyKeypointTemplate(def.extra.template)] : [];
  return [...legacy, ...solo].map((t) => {
    const points = (t.key_points as JsonValue[]).filter(isObject);
    const names = points
      .slice()
      .sort((a, b) => Number(a.index ?? 0) - Number(b.index ?? 0))
      .map((p) => String(p.label ?? p.index));
    const skeleton = (Array.isArray(t.skeleton) ? t.skeleton.filter(isObject) : []).map(
      (s) => [Number(s.joint1 ?? 0), Number(s.joint2 ?? 0)] as [number, number],
    );
    const id = String(t.template_id ?? def.id);
    return { id, name: String(t.template_name ?? id), names, skeleton };
  });
}

/** A keypoint as `[x, y, state]`, from the legacy `x`/`y` or SOLO's `location`. */
export function keypointXY(k: JsonObject): [number, number, number] {
  const location = Array.isArray(k.location) ? k.location : undefined;
  const x = Number(location ? location[0] : (k.x ?? 0));
  const y = Number(location ? location[1] : (k.y ?? 0));
  return [Number.isFinite(x) ? x : 0, Number.isFinite(y) ? y : 0, Number(k.state ?? 0)];
}

// ---- values ----------------------------------------------------------------------------------------

/** Keys the SOLO reader leaves on an annotation's extra that mean nothing in the legacy layout. */
export const SOLO_ANNOTATION_KEYS = [
  '@type',
  'sensorId',
  'description',
  'imageFormat',
  'dimension',
  'templateId',
  'valuesKey',
];

/** A SOLO-read annotation value in the legacy shape of its kind. */
export function legacyValue(
  kind: AnnotationKind,
  v: JsonValue,
  templateId: JsonValue | undefined,
): JsonValue {
  if (!isObject(v)) return v;
  const out = renameKeys(v, snakeCase) as JsonObject;
  switch (kind) {
    case 'keypoints':
      if (templateId !== undefined && out.template_guid === undefined) out.template_guid = templateId;
      if (Array.isArray(v.keypoints))
        out.keypoints = v.keypoints.map((k) => {
          if (!isObject(k)) return k;
          const [x, y, state] = keypointXY(k);
          return { index: k.index ?? null, x, y, state };
        });
      return out;
    case 'instance_segmentation':
      // The legacy writer's instance colours are Color32 bytes: datasetinsights compares them with pixels.
      if (out.color !== undefined) out.color = colourObject(out.color, false) ?? null;
      return out;
    case 'semantic_segmentation':
      if (out.pixel_value !== undefined) out.pixel_value = colourObject(out.pixel_value, true) ?? null;
      return out;
    default:
      return out;
  }
}

/** A legacy annotation value in SOLO's shape of its kind (2D boxes are converted by the SOLO writer). */
export function soloValue(kind: AnnotationKind, v: JsonValue): JsonValue {
  if (!isObject(v)) return v;
  const { template_guid: _template, ...rest } = v;
  const out = renameKeys(rest, camelCase) as JsonObject;
  switch (kind) {
    case 'keypoints':
      if (Array.isArray(v.keypoints))
        out.keypoints = v.keypoints.map((k) => {
          if (!isObject(k)) return k;
          const [x, y, state] = keypointXY(k);
          const { x: _x, y: _y, location: _l, ...kept } = k;
          return {
            ...(renameKeys(kept, camelCase) as JsonObject),
            index: k.index ?? null,
            location: [x, y],
            state,
          };
        });
      return out;
    case 'instance_segmentation':
      if (out.color !== undefined) out.color = colourArray(out.color) ?? null;
      return out;
    case 'semantic_segmentation':
      if (out.pixelValue !== undefined) out.pixelValue = colourArray(out.pixelValue) ?? null;
      return out;
    default:
      return out;
  }
}

/**
 * A SOLO metric's values in the legacy shape: records with snake_case keys (RenderedObjectInfo's colour
 * as `instance_color` bytes), and a scalar (GenericMetric's `value`) as one record, since
 * datasetinsights' `filter_metrics` adds the metric's ids to every value and so needs objects.
 */
export function legacyMetricValues(
  kind: MetricKind,
  def: MetricDefinition | undefined,
  values: JsonValue,
): JsonValue[] {
  if (!Array.isArray(values)) return [{ [def?.id === 'scenario_iteration' ? 'iteration' : 'value']: values }];
  return values.map((v) => {
    if (!isObject(v)) return v;
    const out = renameKeys(v, snakeCase) as JsonObject;
    if (kind === 'rendered_object_info' && out.color !== undefined) {
      out.instance_color = colourObject(out.color, false) ?? null;
      delete out.color;
    }
    return out;
  });
}

/** A legacy metric's values in SOLO's shape; a single `{value}` / `{iteration}` record is a scalar again. */
export function soloMetricValues(
  kind: MetricKind,
  values: JsonValue,
): { values: JsonValue } | { value: JsonValue } {
  if (!Array.isArray(values)) return { value: values };
  if (kind === 'generic' && values.length === 1 && isObject(values[0])) {
    const keys = Object.keys(values[0]);
    if (keys.length === 1 && (keys[0] === 'value' || keys[0] === 'iteration'))
      return { value: values[0][keys[0]]! };
  }
  return {
    values: values.map((v) => {
      if (!isObject(v)) return v;
      const { instance_color, ...rest } = v;
      const out = renameKeys(rest, camelCase) as JsonObject;
      if (instance_color !== undefined) out.color = colourArray(instance_color) ?? null;
      return out;
    }),
  };
}

/** The legacy definition of a SOLO-read annotation definition. */
export function legacyAnnotationDefinition(def: AnnotationDefinition): AnnotationDefinition {
  const { '@type': _type, template, ...extra } = def.extra ?? {};
  const legacy: AnnotationDefinition = {
    id: def.id,
    name: LEGACY_ANNOTATION_NAMES[def.kind] ?? def.name,
    description: def.description,
    format: def.kind.endsWith('segmentation') ? 'PNG' : 'JSON',
    kind: def.kind,
  };
  if (isObject(template)) legacy.spec = [legacyKeypointTemplate(template)];
  else if (def.spec) legacy.spec = def.spec;
  if (Object.keys(extra).length) legacy.extra = extra;
  return legacy;
}

/**
 * The legacy definition of a SOLO-read metric definition. Object count and rendered object info get
 * the label spec the legacy writer gives them (datasetinsights' RenderedObjectInfo maps labels through
 * it); SOLO keeps it only with the labelers.
 */
export function legacyMetricDefinition(
  def: MetricDefinition,
  labels: JsonValue[] | undefined,
): MetricDefinition {
  const { '@type': _type, ...extra } = def.extra ?? {};
  const kind = metricKind(def);
  const legacy: MetricDefinition = {
    id: def.id,
    name:
      kind === 'object_count'
        ? 'object count'
        : kind === 'rendered_object_info'
          ? 'rendered object info'
          : def.name,
    description: def.description,
  };
  if (def.spec) legacy.spec = def.spec;
  else if (kind !== 'generic' && labels) legacy.spec = labels;
  if (Object.keys(extra).length) legacy.extra = extra;
  return legacy;
}
