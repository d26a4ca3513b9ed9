/**
 * Windows of every actor's poses, as the viewer plays them: read from the store a stream at a time,
 * answered as binary columns (state-window-wire.ts) or JSON, over HTTP (`GET /api/runs/:id/states`) and
 * over the live WebSocket (`states` messages, live-updates.ts).
 */
import { numbersOf, type ColumnBatch } from '../model/columns.js';
import { SimrecError } from '../model/errors.js';
import { STATE_STREAM } from '../model/standard-streams.js';
import type { StoreBackend } from '../model/store-port.js';
import { fieldsOfStream, type FieldDecl } from '../model/stream.js';
import { requireRun } from '../replay/run-queries.js';
import {
  encodeStateWindow,
  windowGrid,
  windowIndex,
  windowSpan,
  type StateWindowColumns,
} from './state-window-wire.js';
import type { StateColumns, StateWindow } from './wire-types.js';

/**
 * How much of a run one window holds: a minute from `from` unless `to` says otherwise, at most
 * MAX_STATE_SAMPLES samples over its actors (a longer one is refused). Without them, a long run was one
 * answer that took seconds and more of the server's memory than the run itself.
 */
export const DEFAULT_STATE_WINDOW_MICROS = 60_000_000;
export const MAX_STATE_SAMPLES = 500_000;

/** Fields the viewer plays back for every actor; the inspector asks for the rest at the cursor. */
const PLAYBACK_FIELDS = ['x', 'y', 'yaw', 'speed'] as const;

/**
 * What a request for a window says: its bounds (`from`, `to`: inclusive, microseconds since the epoch),
 * or the moment whose window of the viewer's grid it wants: `around` (microseconds since the epoch) or
 * `moment` (seconds from the run's first sample, as a viewer link's `t`), which a page asks for before it
 * knows how the run is cut.
 */
export interface WindowRequest {
  from?: number | undefined;
  to?: number | undefined;
  around?: number | undefined;
  moment?: number | undefined;
}

/** An actor's state over a window as the store read it: its stream's batches, not yet copied anywhere. */
interface ActorWindow {
  fields: FieldDecl[];
  batches: ColumnBatch[];
  rows: number;
}

export interface StateWindowRead {
  from: number;
  to: number;
  actors: Map<string, ActorWindow>;
}

/**
 * The bounds a request asks for. `named(field)` says where a field came from in an error ("query
 * parameter moment", "states message's moment").
 */
export async function windowBounds(
  store: StoreBackend,
  run: number,
  request: WindowRequest,
  named: (field: string) => string,
): Promise<{ from?: number | undefined; to?: number | undefined }> {
  const { around, moment } = request;
  if (around === undefined && moment === undefined) return { from: request.from, to: request.to };
  if (around !== undefined && moment !== undefined)
    throw new SimrecError('invalid', `${named('around')} and ${named('moment')}: give one`);
  if (moment !== undefined && !(Number.isFinite(moment) && moment >= 0))
    throw new SimrecError(
      'invalid',
      `${named('moment')}: expected seconds from the run's first sample (a number >= 0), got ${JSON.stringify(moment)}`,
    );
  await requireRun(store, run);
  const [actors, streams] = await Promise.all([store.listActors(run), store.listStreams(run)]);
  const grid = windowGrid(actors, streams);
  return windowSpan(grid, windowIndex(grid, around ?? grid.begin + Math.round(moment! * 1e6)));
}

/**
 * Every actor's poses over [from, to] (a minute from the run's begin unless they say otherwise), at
 * most MAX_STATE_SAMPLES of them: a longer window is refused having read one chunk past the limit, and a
 * request its client gave up (`signal`) stops being read.
 */
export async function readStateWindow(
  store: StoreBackend,
  run: number,
  bounds: { from?: number | undefined; to?: number | undefined },
  signal?: AbortSignal,
): Promise<StateWindowRead> {
  const info = await requireRun(store, run);
  const from = bounds.from ?? info.begin;
  const to = bounds.to ?? from + DEFAULT_STATE_WINDOW_MICROS - 1;
  const streams = (await store.listStreams(run)).filter((s) => s.name === STATE_STREAM && s.actor !== null);
  const actors = new Map<string, ActorWindow>();
  let held = 0;
  for (const s of streams) {
    // A viewer that sought elsewhere cancels the window it no longer wants: the reading stops here.
    if (signal?.aborted)
      throw new SimrecError('invalid', `states of run ${run} from ${from} to ${to}: the client gave it up`);
    const actor: ActorWindow = { fields: fieldsOfStream(s), batches: [], rows: 0 };
    for await (const batch of store.readColumns({ run, stream: s.id, from, to, fields: PLAYBACK_FIELDS })) {
      held += batch.t.length;
      if (held > MAX_STATE_SAMPLES)
        throw new SimrecError(
          'invalid',
          `states of run ${run} from ${from} to ${to}: more than ${MAX_STATE_SAMPLES} samples in the window; ask for a shorter one (to - from)`,
        );
      actor.batches.push(batch);
      actor.rows += batch.t.length;
    }
    actors.set(s.actor!, actor);
  }
  return { from, to, actors };
}

/** Writes an actor's playback fields from its batches into `out` (a number where a sample has one, NaN elsewhere). */
function fillPlayback(actor: ActorWindow, out: StateWindowColumns): void {
  let row = 0;
  for (const batch of actor.batches) {
    out.t.set(batch.t, row);
    for (const name of PLAYBACK_FIELDS) out[name].set(numbersOf(batch, actor.fields, name), row);
    row += batch.t.length;
  }
}

/** The window as binary columns (state-window-wire.ts), written straight from the store's batches. */
export function stateWindowBytes(window: StateWindowRead): Uint8Array {
  const ordered = [...window.actors.values()];
  return encodeStateWindow(
    { from: window.from, to: window.to, actors: [...window.actors].map(([id, a]) => [id, a.rows]) },
    (k, columns) => fillPlayback(ordered[k]!, columns),
  );
}

/** The window as JSON has it: null where a sample has no number in a field. */
export function stateWindowJson(window: StateWindowRead): StateWindow {
  const actors: Record<string, StateColumns> = {};
  for (const [id, actor] of window.actors) {
    const columns: StateWindowColumns = {
      t: new Float64Array(actor.rows),
      x: new Float64Array(actor.rows),
      y: new Float64Array(actor.rows),
      yaw: new Float64Array(actor.rows),
      speed: new Float64Array(actor.rows),
    };
    fillPlayback(actor, columns);
    const orNull = (values: Float64Array | Float32Array): (number | null)[] =>
      Array.from(values, (v) => (Number.isNaN(v) ? null : v));
    actors[id] = {
      t: Array.from(columns.t),
      x: orNull(columns.x),
      y: orNull(columns.y),
      yaw: orNull(columns.yaw),
      speed: orNull(columns.speed),
    };
  }
  return { from: window.from, to: window.to, actors };
}
