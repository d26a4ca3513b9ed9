import { EventLoopTurns } from '../model/event-loop-turns.js';
import { notFound } from '../model/errors.js';
import type { ColumnBatch, ColumnValues } from '../model/columns.js';
import type { ActorInfo, PresenceInterval, RunInfo } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import { fieldsOfStream, type StreamInfo } from '../model/stream.js';
import { storedEvaluation } from '../replay/stored-evaluation.js';
import type {
  ActorPresenceDiff,
  DiffEvent,
  Divergence,
  EvaluationMetricsRow,
  FieldLargest,
  RunDiff,
  StreamSamplesDiff,
} from './diff-types.js';
import { distance, sameNumber, sameValue } from './value-compare.js';

/**
 * Two runs compared, stream by stream, sample by sample. Actors are matched by id, streams by id
 * (`actor/name`), samples by their time from each run's start: two recordings of one scenario begin
 * at different wall-clock times, and a step counter means different things in different sources
 * (SUMO's step, a frame number, a sample index), while the time since the start is what a simulator
 * with a fixed step reproduces exactly. Both runs are read as columns a chunk at a time, side by side,
 * so memory holds a chunk of each stream being compared, not the runs.
 */

export interface DiffOptions {
  /** Only these actors' streams (run-level streams are left out when given). */
  actors?: readonly string[];
  /** Only streams of these names (`state`, `control`) or ids (`ego/state`). */
  streams?: readonly string[];
  /** Only these fields. */
  fields?: readonly string[];
  /** A window, in seconds from each run's start. */
  from?: number;
  to?: number;
  /**
   * Per field, the largest difference that is still the same: by `field`, `stream.field` (a stream
   * name: `state.x`) or `*` for every other field. A field with none is compared bit for bit.
   */
  tolerances?: Readonly<Record<string, number>>;
  /** Events of one kind and actors count as the same within this many seconds (default 0.5). */
  eventSeconds?: number;
  /** Presence changes within this many seconds are the same (default 0: exactly). */
  presenceSeconds?: number;
  /** The most divergences listed (each actor, stream and field's first); default 1000. */
  maxDivergences?: number;
  signal?: AbortSignal;
}

/** The stream compared separately, as events: kind, actors and time within a tolerance. */
const EVENTS = 'events';

export async function diffRuns(
  store: StoreBackend,
  runA: number,
  runB: number,
  options: DiffOptions = {},
): Promise<RunDiff> {
  options.signal?.throwIfAborted();
  const [a, b] = await Promise.all([runOf(store, runA), runOf(store, runB)]);
  const [actorsA, actorsB, streamsA, streamsB] = await Promise.all([
    store.listActors(runA),
    store.listActors(runB),
    store.listStreams(runA),
    store.listStreams(runB),
  ]);
  const keepActor = (id: string | null): boolean =>
    options.actors === undefined ? true : id !== null && options.actors.includes(id);
  const keepStream = (s: StreamInfo): boolean =>
    keepActor(s.actor) &&
    (options.streams === undefined || options.streams.includes(s.name) || options.streams.includes(s.id));

  const diff = new DiffBuilder(a, b, options);
  diff.compareActors(
    actorsA.filter((x) => keepActor(x.id)),
    actorsB.filter((x) => keepActor(x.id)),
  );

  const byIdB = new Map(streamsB.filter(keepStream).map((s) => [s.id, s]));
  const compared: [StreamInfo, StreamInfo][] = [];
  for (const sa of streamsA.filter(keepStream)) {
    const sb = byIdB.get(sa.id);
    if (!sb) diff.result.streams.onlyA.push(sa.id);
    else {
      byIdB.delete(sa.id);
      compared.push([sa, sb]);
    }
  }
  diff.result.streams.onlyB.push(...byIdB.keys());
  for (const [sa, sb] of compared) {
    await diff.turns.take();
    options.signal?.throwIfAborted();
    if (sa.name === EVENTS && sa.actor === null) await diff.compareEvents(store, sa, sb);
    else await diff.compareStream(store, sa, sb);
  }
  diff.result.scores = await compareScores(store, a, b, streamsA, streamsB);
  return diff.finish();
}

async function runOf(store: StoreBackend, id: number): Promise<RunInfo> {
  const run = await store.getRun(id);
  if (!run) throw notFound(`run ${id} not found`);
  return run;
}

/** A batch at a time of one stream, and a row in it. */
class StreamCursor {
  batch: ColumnBatch | null = null;
  row = 0;
  private readonly batches: AsyncIterator<ColumnBatch>;
  constructor(batches: AsyncIterable<ColumnBatch>) {
    this.batches = batches[Symbol.asyncIterator]();
  }

  /** True while there is a row; loads the next batch when this one is done. */
  async ready(): Promise<boolean> {
    while (!this.batch || this.row >= this.batch.t.length) {
      const next = await this.batches.next();
      if (next.done) {
        this.batch = null;
        return false;
      }
      this.batch = next.value;
      this.row = 0;
    }
    return true;
  }

  /** The batch's columns of `fields`, in their order (undefined: a field without a column). */
  columnsOf(fields: readonly string[]): (ColumnValues | undefined)[] {
    return fields.map((f) => this.batch!.columns[f]);
  }
}

/** What a field adds up to over the streams of one name (`state.x` over every actor's `state`). */
interface FieldTotals {
  /** Samples that differ. */
  differing: number;
  largest: FieldLargest | null;
}

/**
 * A field of one stream being compared: where its divergences go. Made once a stream, so that a
 * divergence (every sample's, when two runs part early) builds no key and looks nothing up.
 */
interface FieldTrack {
  stream: StreamInfo;
  field: string;
  /** Its key among the first divergences: actor, stream and field. */
  key: string;
  first: Divergence | null;
  /** Undefined for `t` (a sample one run's stream lacks): not a field's difference. */
  totals: FieldTotals | undefined;
}

/** Rows of two batches at the same time from each run's start, as pairs of indices. */
class MatchedRows {
  a = new Int32Array(1024);
  b = new Int32Array(1024);
  length = 0;

  clear(): void {
    this.length = 0;
  }

  add(i: number, j: number): void {
    if (this.length === this.a.length) {
      const a = new Int32Array(this.length * 2);
      const b = new Int32Array(this.length * 2);
      a.set(this.a);
      b.set(this.b);
      this.a = a;
      this.b = b;
    }
    this.a[this.length] = i;
    this.b[this.length++] = j;
  }
}

/**
 * A field's values at matched rows compared (sameValue's rules), `differ` called for each pair that is
 * not the same, in row order. Two number columns are compared as numbers without a value made for
 * either side unless they differ.
 */
function compareColumns(
  columnA: ColumnValues | undefined,
  columnB: ColumnValues | undefined,
  rows: MatchedRows,
  tolerance: number | undefined,
  differ: (i: number, j: number, a: unknown, b: unknown) => void,
): void {
  // A declared field neither batch has: absent in every row of both, the same.
  if (columnA === undefined && columnB === undefined) return;
  const { a: rowsA, b: rowsB, length } = rows;
  if (columnA instanceof Float64Array && columnB instanceof Float64Array) {
    for (let k = 0; k < length; k++) {
      const i = rowsA[k]!;
      const j = rowsB[k]!;
      const x = columnA[i]!;
      const y = columnB[j]!;
      // The usual case (equal, not zero) decided here; the rest by sameNumber.
      if ((x !== y || x === 0) && !sameNumber(x, y, tolerance)) differ(i, j, x, y);
    }
    return;
  }
  for (let k = 0; k < length; k++) {
    const i = rowsA[k]!;
    const j = rowsB[k]!;
    // An absent number is NaN in its column, an absent other value undefined: equal on both sides.
    const va = columnA?.[i];
    const vb = columnB?.[j];
    if (!sameValue(va, vb, tolerance)) differ(i, j, va, vb);
  }
}

class DiffBuilder {
  readonly result: RunDiff;
  private readonly a: RunInfo;
  private readonly b: RunInfo;
  private readonly options: DiffOptions;
  /** By `actor\0stream\0field`: the first divergence of each. */
  private readonly firsts = new Map<string, Divergence>();
  /** By `stream name.field`: how many samples differ (0 for a field compared and the same), the largest. */
  private readonly totals = new Map<string, FieldTotals>();
  /** A server's other requests are answered while two long runs are compared. */
  readonly turns = new EventLoopTurns();

  constructor(a: RunInfo, b: RunInfo, options: DiffOptions) {
    this.a = a;
    this.b = b;
    this.options = options;
    this.result = {
      a: { id: a.id, begin: a.begin, description: a.description },
      b: { id: b.id, begin: b.begin, description: b.description },
      matchedBy: 'time from each run start',
      same: true,
      firstDivergence: null,
      firstByActor: {},
      divergences: [],
      largest: [],
      streams: { onlyA: [], onlyB: [], compared: 0, samples: [], fields: [], fieldsOnly: [] },
      actors: { onlyA: [], onlyB: [], presence: [] },
      events: { onlyA: [], onlyB: [], matched: 0 },
      scores: null,
      viewerPath: `#/diff/${a.id}/${b.id}`,
    };
  }

  private tolerance(stream: string, field: string): number | undefined {
    const t = this.options.tolerances;
    return t?.[`${stream}.${field}`] ?? t?.[field] ?? t?.['*'];
  }

  compareActors(actorsA: ActorInfo[], actorsB: ActorInfo[]): void {
    const byIdB = new Map(actorsB.map((x) => [x.id, x]));
    const seconds = (this.options.presenceSeconds ?? 0) * 1e6;
    for (const x of actorsA) {
      const y = byIdB.get(x.id);
      if (!y) {
        this.result.actors.onlyA.push(x.id);
        continue;
      }
      byIdB.delete(x.id);
      const pa = relative(x.presence, this.a.begin);
      const pb = relative(y.presence, this.b.begin);
      if (!samePresence(pa, pb, seconds)) {
        const change: ActorPresenceDiff = { actor: x.id, a: pa, b: pb };
        this.result.actors.presence.push(change);
      }
    }
    this.result.actors.onlyB.push(...byIdB.keys());
  }

  /** A stream of both runs, merged on time from each start, field by field. */
  async compareStream(store: StoreBackend, sa: StreamInfo, sb: StreamInfo): Promise<void> {
    const fieldsA = fieldsOfStream(sa).map((f) => f.name);
    const fieldsB = new Set(fieldsOfStream(sb).map((f) => f.name));
    const wanted = (f: string): boolean =>
      this.options.fields === undefined || this.options.fields.includes(f);
    const fields = fieldsA.filter((f) => fieldsB.has(f) && wanted(f));
    const onlyA = fieldsA.filter((f) => !fieldsB.has(f) && wanted(f));
    const onlyB = [...fieldsB].filter((f) => !fieldsA.includes(f) && wanted(f));
    if (onlyA.length || onlyB.length) this.result.streams.fieldsOnly.push({ stream: sa.id, onlyA, onlyB });
    this.result.streams.compared++;
    const tolerances = fields.map((f) => this.tolerance(sa.name, f));
    const tracks = fields.map((f) => this.track(sa, f, this.totalsOf(`${sa.name}.${f}`)));
    const time = this.track(sa, 't', undefined);
    const window = (begin: number): { from?: number; to?: number } => ({
      ...(this.options.from !== undefined ? { from: begin + Math.round(this.options.from * 1e6) } : {}),
      ...(this.options.to !== undefined ? { to: begin + Math.round(this.options.to * 1e6) } : {}),
    });
    const read = (run: RunInfo, stream: StreamInfo): StreamCursor => {
      const args: Parameters<StoreBackend['readColumns']>[0] = {
        run: run.id,
        stream: stream.id,
        fields,
        transient: true,
        ...window(run.begin),
      };
      if (this.options.signal) args.signal = this.options.signal;
      return new StreamCursor(store.readColumns(args));
    };
    const ca = read(this.a, sa);
    const cb = read(this.b, sb);
    const counts: StreamSamplesDiff = { stream: sa.id, matched: 0, onlyA: 0, onlyB: 0 };
    const offA = this.a.begin;
    const offB = this.b.begin;
    // The two batches at hand are matched on time first, then compared a column at a time (a loop
    // over one typed array per field, not every field's value looked up in each row); only the next
    // batch of either is awaited. Each field's divergences still come in time order.
    const rows = new MatchedRows();
    while ((await ca.ready()) && (await cb.ready())) {
      await this.turns.take();
      this.options.signal?.throwIfAborted();
      const timesA = ca.batch!.t;
      const timesB = cb.batch!.t;
      let i = ca.row;
      let j = cb.row;
      rows.clear();
      while (i < timesA.length && j < timesB.length) {
        const ta = timesA[i]! - offA;
        const tb = timesB[j]! - offB;
        if (ta === tb) rows.add(i++, j++);
        else if (ta < tb) this.sampleOnly('a', time, counts, timesA[i++]!);
        else this.sampleOnly('b', time, counts, timesB[j++]!);
      }
      ca.row = i;
      cb.row = j;
      counts.matched += rows.length;
      const columnsA = ca.columnsOf(fields);
      const columnsB = cb.columnsOf(fields);
      for (let f = 0; f < fields.length; f++) {
        const track = tracks[f]!;
        compareColumns(columnsA[f], columnsB[f], rows, tolerances[f], (i, j, va, vb) =>
          this.diverged(track, timesA[i]!, timesB[j]!, va, vb),
        );
      }
    }
    for (const [side, cursor] of [
      ['a', ca],
      ['b', cb],
    ] as const)
      while (await cursor.ready()) {
        const times = cursor.batch!.t;
        for (let i = cursor.row; i < times.length; i++) this.sampleOnly(side, time, counts, times[i]!);
        cursor.row = times.length;
      }
    if (counts.onlyA || counts.onlyB) this.result.streams.samples.push(counts);
  }

  /** A field's totals over the streams of one name (`state.x`), made at its first stream. */
  private totalsOf(name: string): FieldTotals {
    let totals = this.totals.get(name);
    if (!totals) this.totals.set(name, (totals = { differing: 0, largest: null }));
    return totals;
  }

  private track(stream: StreamInfo, field: string, totals: FieldTotals | undefined): FieldTrack {
    return { stream, field, key: `${stream.actor ?? ''}\0${stream.id}\0${field}`, first: null, totals };
  }

  /** A sample at a time the other run's stream has none: a divergence of the field `t`. */
  private sampleOnly(side: 'a' | 'b', time: FieldTrack, counts: StreamSamplesDiff, t: number): void {
    if (side === 'a') {
      const offset = t - this.a.begin;
      counts.onlyA++;
      this.diverged(time, t, this.b.begin + offset, offset / 1e6, null);
    } else {
      const offset = t - this.b.begin;
      counts.onlyB++;
      this.diverged(time, this.a.begin + offset, t, null, offset / 1e6);
    }
  }

  private diverged(track: FieldTrack, tA: number, tB: number, a: unknown, b: unknown): void {
    this.result.same = false;
    const { stream, field, totals } = track;
    const actor = stream.actor;
    const d = distance(a, b);
    if (totals) {
      totals.differing++;
      if (d !== null && (totals.largest === null || d > totals.largest.difference))
        totals.largest = {
          stream: stream.name,
          field,
          difference: d,
          t: tA,
          offset: (tA - this.a.begin) / 1e6,
          actor,
          a: jsonable(a),
          b: jsonable(b),
        };
    }
    if (track.first) {
      track.first.count++;
      return;
    }
    track.first = {
      t: tA,
      offset: (tA - this.a.begin) / 1e6,
      tB,
      actor,
      stream: stream.id,
      field,
      a: jsonable(a),
      b: jsonable(b),
      difference: d,
      count: 1,
    };
    this.firsts.set(track.key, track.first);
  }

  /** Events as people read them: the same kind with the same actors at about the same time. */
  async compareEvents(store: StoreBackend, sa: StreamInfo, sb: StreamInfo): Promise<void> {
    const seconds = this.options.eventSeconds ?? 0.5;
    const [ea, eb] = await Promise.all([
      readEvents(store, this.a, sa, this.options),
      readEvents(store, this.b, sb, this.options),
    ]);
    const unmatched = new Set(eb.map((_, i) => i));
    for (const e of ea) {
      let match = -1;
      for (const i of unmatched) {
        const f = eb[i]!;
        if (
          f.kind === e.kind &&
          f.actors.join('\0') === e.actors.join('\0') &&
          Math.abs(f.offset - e.offset) <= seconds
        ) {
          if (match === -1 || Math.abs(f.offset - e.offset) < Math.abs(eb[match]!.offset - e.offset))
            match = i;
        }
      }
      if (match === -1) this.result.events.onlyA.push(e);
      else {
        unmatched.delete(match);
        this.result.events.matched++;
      }
    }
    this.result.events.onlyB.push(...[...unmatched].sort((x, y) => x - y).map((i) => eb[i]!));
    if (this.result.events.onlyA.length || this.result.events.onlyB.length) this.result.same = false;
  }

  finish(): RunDiff {
    const r = this.result;
    if (r.streams.onlyA.length || r.streams.onlyB.length || r.streams.fieldsOnly.length) r.same = false;
    if (r.actors.onlyA.length || r.actors.onlyB.length || r.actors.presence.length) r.same = false;
    const all = [...this.firsts.values()].sort(
      (x, y) =>
        x.t - y.t ||
        (x.actor ?? '').localeCompare(y.actor ?? '') ||
        x.stream.localeCompare(y.stream) ||
        x.field.localeCompare(y.field),
    );
    r.firstDivergence = all[0] ?? null;
    for (const d of all) if (d.actor !== null && !(d.actor in r.firstByActor)) r.firstByActor[d.actor] = d;
    r.divergences = all.slice(0, this.options.maxDivergences ?? 1000);
    const totals = [...this.totals].sort(([x], [y]) => x.localeCompare(y));
    r.streams.fields = totals.map(([name, { differing }]) => ({ name, differing }));
    r.largest = totals
      .flatMap(([, { largest }]) => (largest ? [largest] : []))
      .sort((x, y) => x.stream.localeCompare(y.stream) || x.field.localeCompare(y.field));
    const first = r.firstDivergence;
    if (first) {
      const params = new URLSearchParams({ at: String(first.t) });
      if (first.actor !== null) params.set('actor', first.actor);
      r.viewerPath = `#/diff/${r.a.id}/${r.b.id}?${params.toString()}`;
    }
    return r;
  }
}

/** A value as JSON carries it: NaN and infinities as strings, so a report says what was there. */
function jsonable(v: unknown): unknown {
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  return v === undefined ? null : v;
}

function relative(presence: readonly PresenceInterval[] | undefined, begin: number): PresenceInterval[] {
  return (presence ?? []).map((iv) => ({ from: iv.from - begin, to: iv.to === null ? null : iv.to - begin }));
}

function samePresence(a: PresenceInterval[], b: PresenceInterval[], tolerance: number): boolean {
  if (a.length !== b.length) return false;
  const near = (x: number | null, y: number | null): boolean =>
    x === null || y === null ? x === y : Math.abs(x - y) <= tolerance;
  return a.every((iv, i) => near(iv.from, b[i]!.from) && near(iv.to, b[i]!.to));
}

async function readEvents(
  store: StoreBackend,
  run: RunInfo,
  stream: StreamInfo,
  options: DiffOptions,
): Promise<DiffEvent[]> {
  const events: DiffEvent[] = [];
  for await (const batch of store.readSamples({ run: run.id, stream: stream.id }))
    for (const s of batch) {
      const offset = (s.t - run.begin) / 1e6;
      if (options.from !== undefined && offset < options.from) continue;
      if (options.to !== undefined && offset > options.to) continue;
      const actors = Array.isArray(s.actors) ? s.actors.map(String) : [];
      if (options.actors && !actors.some((x) => options.actors!.includes(x))) continue;
      events.push({
        kind: String(s.kind ?? ''),
        actors,
        t: s.t,
        offset,
        detail: typeof s.detail === 'string' ? s.detail : '',
      });
    }
  return events;
}

async function compareScores(
  store: StoreBackend,
  a: RunInfo,
  b: RunInfo,
  streamsA: StreamInfo[],
  streamsB: StreamInfo[],
): Promise<EvaluationMetricsRow[] | null> {
  const [ea, eb] = await Promise.all([
    storedEvaluation(store, a.id, streamsA),
    storedEvaluation(store, b.id, streamsB),
  ]);
  if (!ea && !eb) return null;
  const rows: EvaluationMetricsRow[] = [];
  const row = (metric: string, x: number | undefined, y: number | undefined): void => {
    const va = x ?? null;
    const vb = y ?? null;
    rows.push({ metric, a: va, b: vb, delta: va === null || vb === null ? null : vb - va });
  };
  row('score', ea?.score, eb?.score);
  const metrics = new Set([...Object.keys(ea?.scores ?? {}), ...Object.keys(eb?.scores ?? {})]);
  for (const m of [...metrics].sort())
    row(m, ea?.scores[m as keyof typeof ea.scores], eb?.scores[m as keyof typeof eb.scores]);
  return rows;
}
