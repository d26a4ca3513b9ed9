import type { PresenceInterval } from '../model/run.js';

/** What `simrec diff`, the library's diffRuns and GET /api/diff answer (its JSON, field for field). */

export interface RunRef {
  id: number;
  /** Microseconds since the Unix epoch: times "from the start" are from here. */
  begin: number;
  description: string;
}

/** Where an actor's stream and field first differ (or a sample is in one run only: field `t`). */
export interface Divergence {
  /** The store's time of run A's sample (microseconds); for a sample of B only, where A's would be. */
  t: number;
  /** Seconds from run A's start. */
  offset: number;
  /** The store's time of run B's sample. */
  tB: number;
  actor: string | null;
  stream: string;
  field: string;
  /** The two values (for `t`, the sample's seconds from its start, null on the side that has none). */
  a: unknown;
  b: unknown;
  /** |a - b| where both are numbers (or vectors of numbers: the largest component's). */
  difference: number | null;
  /** How many samples of this actor, stream and field differ in all. */
  count: number;
}

/** The largest difference of a field over every actor (by stream name and field). */
export interface FieldLargest {
  stream: string;
  field: string;
  difference: number;
  t: number;
  offset: number;
  actor: string | null;
  a: unknown;
  b: unknown;
}

export interface StreamSamplesDiff {
  stream: string;
  matched: number;
  /** Samples at times the other run's stream has none. */
  onlyA: number;
  onlyB: number;
}

export interface ActorPresenceDiff {
  actor: string;
  /** Presence intervals in microseconds from each run's start. */
  a: PresenceInterval[];
  b: PresenceInterval[];
}

export interface DiffEvent {
  kind: string;
  actors: string[];
  t: number;
  /** Seconds from its run's start. */
  offset: number;
  detail: string;
}

export interface EvaluationMetricsRow {
  metric: string;
  a: number | null;
  b: number | null;
  /** b - a. */
  delta: number | null;
}

export interface RunDiff {
  a: RunRef;
  b: RunRef;
  matchedBy: 'time from each run start';
  same: boolean;
  firstDivergence: Divergence | null;
  /** Each actor's first divergence. */
  firstByActor: Record<string, Divergence>;
  /** Each actor, stream and field's first divergence, in time order (at most maxDivergences). */
  divergences: Divergence[];
  largest: FieldLargest[];
  streams: {
    onlyA: string[];
    onlyB: string[];
    compared: number;
    /** Streams with samples at times the other run's has none. */
    samples: StreamSamplesDiff[];
    /** Every field compared, by stream name (`state.x`), with how many samples differ over all actors. */
    fields: { name: string; differing: number }[];
    /** Fields one run's stream has and the other's lacks. */
    fieldsOnly: { stream: string; onlyA: string[]; onlyB: string[] }[];
  };
  actors: { onlyA: string[]; onlyB: string[]; presence: ActorPresenceDiff[] };
  events: { onlyA: DiffEvent[]; onlyB: DiffEvent[]; matched: number };
  /** The stored evaluations side by side; null when neither run has one. */
  scores: EvaluationMetricsRow[] | null;
  /** The viewer's path that opens this comparison at the first divergence. */
  viewerPath: string;
}
