/**
 * What the HTTP API and the live WebSocket channel send, as types: the server's routes are written
 * against them and the viewer (web/) imports them from here, so the two cannot drift apart. Types
 * only: nothing here runs, and the viewer's bundle takes no server code from it.
 */
import type { RunEvaluation } from '../model/evaluation-scores.js';
import type { AttachmentInfo } from '../model/attachment.js';
import type { RunSummary } from '../model/run.js';
import type { FieldDecl, Sample, StreamInfo } from '../model/stream.js';
import type { RunDescription, Scene } from '../replay/run-queries.js';
import type { RecordingSettingsValues } from './recording-settings.js';
import type { WindowRequest } from './state-windows.js';

/** GET /api/health */
export interface HealthAnswer {
  store: { kind: string; location: string; status: 'connected' };
}

export type { RunEvaluation };

/** GET /api/diff: two runs compared (compare/diff-types.ts). */
export type { RunDiff } from '../compare/diff-types.js';

/** GET /api/sql: at most `limit` rows of the answer; `truncated` when it had more. */
export interface SqlAnswer {
  columns: { name: string; type: string }[];
  rows: unknown[][];
  truncated: boolean;
  limit: number;
  elapsedMs: number;
  /** What writing the tables of runs not yet written said (a field renamed, types widened). */
  warnings: string[];
}

/** A run in GET /api/runs and in the live channel's `runs` messages. */
export interface RunListEntry extends RunSummary {
  /** The overall score of its evaluation, null when it has none. */
  score: number | null;
  /**
   * A run being recorded: its attachments' version (StoreBackend.attachmentsVersion), which changes
   * whenever one is put. A simulator may add camera images without samples (`attach`), so the live
   * channel tells of a run whose attachments changed as of one that grew.
   */
  attachmentsVersion?: string;
}

/** GET /api/runs/:id */
export interface RunDetail extends RunDescription {
  hasRoadNetwork: boolean;
  evaluation: RunEvaluation | null;
  /** The attachments' version read before they were listed: a live update with another is newer. */
  attachmentsVersion: string | null;
}

/** A sensor's camera images in a run. */
export interface CaptureSummary {
  /** The sensor named in the images' metadata (`sensor`), or '' for images that name none. */
  sensor: string;
  count: number;
}

/**
 * GET /api/runs/:id?captures=apart: the detail without the run's camera images in `attachments` (a
 * camera's hour is a hundred thousand), each sensor's count of them in `captures` instead; the viewer
 * asks for them a window at a time (CapturesAnswer).
 */
export interface CapturesApart {
  captures: CaptureSummary[];
}

/**
 * GET /api/runs/:id/captures?from=&to=[&sensor=]: the camera images (of one sensor, or all) from `from`
 * to `to` (microseconds), and the last one before `from`, in time order; at most 2,000, `more` saying
 * whether the window held more.
 */
export interface CapturesAnswer {
  captures: AttachmentInfo[];
  more: boolean;
}

/**
 * GET /api/runs/:id/capture-times?buckets=N: the first camera image's time in each of N equal parts of
 * the run that hold any, for the timeline's strip.
 */
export interface CaptureTimesAnswer {
  times: number[];
}

/**
 * GET /api/runs/:id?fields=shared: the detail with each distinct list of declared fields written once
 * (`fieldLists`) and each stream's `fields` its index there. The state streams of hundreds of actors
 * declare the same fields: written for each, they were three quarters of an hour of traffic's detail.
 */
export interface SharedFieldsRunDetail extends Omit<RunDetail, 'streams'> {
  fieldLists: FieldDecl[][];
  streams: (Omit<StreamInfo, 'fields'> & { fields: number })[];
}

/**
 * GET /api/runs/:id/states: every actor's pose over a window, column by column: from `from` (the run's
 * begin) to `to` (a minute after `from`), at most 500,000 samples (a longer window is refused).
 */
export interface StateWindow {
  from: number;
  to: number;
  actors: Record<string, StateColumns>;
}

export interface StateColumns {
  t: number[];
  x: (number | null)[];
  y: (number | null)[];
  yaw: (number | null)[];
  speed: (number | null)[];
}

/** GET /api/runs/:id/scene */
export type SceneAnswer = Scene;

/**
 * GET /api/runs/:id/samples: at most `limit` samples (100,000, the default and the most); `next`, when
 * not null, is the `from` to ask again with for the rest of the window.
 */
export interface SamplesAnswer {
  stream: string;
  samples: Sample[];
  next: number | null;
}

/** GET /api/runs/:id/trajectory/:actor: the actor's `state` samples, a page at a time as /samples. */
export interface TrajectoryAnswer {
  actor: string;
  samples: Sample[];
  next: number | null;
}

/** GET and PUT /api/settings */
export type Settings = RecordingSettingsValues;

/** An error answer, any route. */
export interface ErrorAnswer {
  error: string;
  code: string;
}

/**
 * Messages of the live channel (/api/live). `mongodb` carries SODA.Sim's connection view (its routes
 * own that shape; the viewer's SODA panel reads it).
 */
export type LiveMessage =
  | { type: 'runs'; runs: RunListEntry[] }
  | { type: 'store-error'; error: string }
  | { type: 'settings'; settings: Settings }
  | ({ type: 'mongodb' } & Record<string, unknown>)
  /** A window asked for on the channel could not be answered (`request` null: the message was not one). */
  | { type: 'states-error'; request: number | null; error: string; code: string };

/**
 * What a viewer may send on the live channel: a window of states to answer (bounds as GET /states
 * takes them), answered by a binary frame (the request's number as a u32, four zero bytes, the window
 * as state-window-wire.ts lays it out), or a request to forget.
 */
export type LiveRequest =
  ({ type: 'states'; request: number; run: number } & WindowRequest) | { type: 'cancel'; request: number };
