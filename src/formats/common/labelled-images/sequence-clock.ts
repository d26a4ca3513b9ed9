/**
 * Perception's time stamps count from the start of each sequence (a scenario iteration), and steps
 * restart with it, while a run has one clock on which a stream's time never goes back. Sequences are
 * therefore laid end to end, in the order they first appear, one capture period apart; the source's
 * time stamp stays in each capture, so an export writes it back unchanged.
 */
import { secondsToMicros } from '../../../model/units.js';
import type { PerceptionCapture, PerceptionMetric } from '../../../model/perception.js';
import type { Warn } from './source-values.js';

/** What the clock needs of a capture: a reader may keep just this of each while it streams the rest. */
export type ClockedCapture = Pick<PerceptionCapture, 'id' | 'sequence' | 'step' | 'timestamp' | 't'> & {
  annotations: readonly { id: string }[];
};

/** Sets each capture's `t` (from the run's begin); returns the sequence ids in clock order. */
export function layOutSequences(captures: ClockedCapture[]): string[] {
  const bySequence = new Map<string, { min: number; max: number; times: Set<number> }>();
  for (const c of captures) {
    const s = bySequence.get(c.sequence);
    if (s) {
      s.min = Math.min(s.min, c.timestamp);
      s.max = Math.max(s.max, c.timestamp);
      s.times.add(c.timestamp);
    } else bySequence.set(c.sequence, { min: c.timestamp, max: c.timestamp, times: new Set([c.timestamp]) });
  }
  let period = Infinity;
  for (const { times } of bySequence.values()) {
    const sorted = [...times].sort((a, b) => a - b);
    for (let i = 1; i < sorted.length; i++) period = Math.min(period, sorted[i]! - sorted[i - 1]!);
  }
  if (!Number.isFinite(period)) period = 1;
  const offsets = new Map<string, number>();
  let next = 0;
  for (const [id, { min, max }] of bySequence) {
    // A sequence whose stamps go below zero is shifted so that it still starts at `next`.
    const offset = next - Math.min(0, min);
    offsets.set(id, offset);
    next = offset + max + period;
  }
  for (const c of captures) c.t = secondsToMicros(offsets.get(c.sequence)! + c.timestamp);
  return [...bySequence.keys()];
}

/**
 * Gives each metric the time of what it refers to: its capture, else the first capture of its sequence
 * and step, else its sequence's start. References that do not resolve, or contradict each other, are
 * warnings (the mock has three kinds).
 */
export function resolveMetricTimes(
  captures: readonly ClockedCapture[],
  metrics: { metric: PerceptionMetric; where: string }[],
  warn: Warn,
): void {
  const byId = new Map(captures.map((c) => [c.id, c] as const));
  const annotationOwner = new Map<string, ClockedCapture>();
  const byStep = new Map<string, ClockedCapture>();
  const sequenceStart = new Map<string, number>();
  for (const c of captures) {
    for (const a of c.annotations) if (!annotationOwner.has(a.id)) annotationOwner.set(a.id, c);
    const key = `${c.sequence}\0${c.step}`;
    const known = byStep.get(key);
    if (!known || c.t < known.t) byStep.set(key, c);
    sequenceStart.set(c.sequence, Math.min(sequenceStart.get(c.sequence) ?? Infinity, c.t));
  }
  for (const { metric: m, where } of metrics) {
    const capture = m.capture === undefined ? undefined : byId.get(m.capture);
    if (m.capture !== undefined && !capture)
      warn(`${where}.capture_id`, `capture ${m.capture} does not exist`);
    if (capture && capture.step !== m.step)
      warn(`${where}.step`, `says step ${m.step} but capture ${capture.id} is at step ${capture.step}`);
    if (capture && m.sequence !== undefined && capture.sequence !== m.sequence)
      warn(`${where}.sequence_id`, `says ${m.sequence} but capture ${capture.id} is in ${capture.sequence}`);
    if (m.annotation !== undefined) {
      const owner = annotationOwner.get(m.annotation);
      if (!owner) warn(`${where}.annotation_id`, `annotation ${m.annotation} does not exist`);
      else if (capture && owner.id !== capture.id)
        warn(
          `${where}.annotation_id`,
          `annotation ${m.annotation} belongs to capture ${owner.id}, not to capture ${capture.id}`,
        );
    }
    const sameStep = m.sequence === undefined ? undefined : byStep.get(`${m.sequence}\0${m.step}`);
    m.t = capture?.t ?? sameStep?.t ?? (m.sequence === undefined ? 0 : (sequenceStart.get(m.sequence) ?? 0));
  }
}
