import type { Attachment, AttachmentInfo } from './attachment.js';
import type { Scenario, ScenarioSummary, VehicleConfig } from './catalog.js';
import type { ColumnBatch, ColumnBatchInput, FrameInput } from './columns.js';
import type { ActorDecl, ActorInfo, EndReason, PresenceInterval, RunInfo, RunInit } from './run.js';
import type { BracketArgs, SampleBracket, StreamAppend } from './store-port.js';
import type { Sample, StreamDecl, StreamInfo } from './stream.js';

/*
 * The two ports a format codec sees instead of a store (docs/architecture.md, "Layers": a format never
 * imports the work layer or a store). A reader writes into a RunTarget; a writer reads from RunSources.
 * The work layer (record/import-run.ts, replay/export-run.ts) implements them over a store and owns
 * what a codec must not: rollback, progress, closing.
 */

/** One run being written by a reader: the recording calls of RunRecorder, and nothing of the store. */
export interface RunSink {
  readonly run: RunInfo;
  declareActors(decls: ActorDecl[]): Promise<ActorInfo[]>;
  declareStreams(decls: StreamDecl[]): Promise<string[]>;
  /** Samples of several streams, in time order per stream. Resolves when durable. */
  appendMany(appends: StreamAppend[]): Promise<void>;
  /** One stream's samples as columns (typed arrays), the fast path. */
  appendColumns(stream: string, batch: ColumnBatchInput): Promise<void>;
  /** One step of many actors' streams of the same name. */
  appendFrame(name: string, frame: FrameInput): Promise<void>;
  /** The actor is gone from t on (see model/run.ts on presence). */
  leave(actor: string, t: number): Promise<void>;
  appear(actor: string, t: number): Promise<void>;
  /** The actor's whole presence, for readers whose source says when each actor was there. */
  setPresence(actor: string, intervals: readonly PresenceInterval[]): Promise<void>;
  attach(attachment: Attachment): Promise<void>;
  /** The run's streams as stored so far (counts, time ranges), after a flush. */
  streams(): Promise<StreamInfo[]>;
  flush(): Promise<void>;
  /** Closes the run: its end is `end`, else its last sample. A reader ends each run it began. */
  end(reason?: EndReason, options?: { end?: number }): Promise<RunInfo>;
}

/** Where a catalog entry goes: a reader puts, the work layer keeps or removes. */
export interface CatalogSink<Item> {
  put(item: Item): Promise<void>;
}

/** What a reader writes into: new runs (one per recording or episode it finds) and catalog entries. */
export interface RunTarget {
  beginRun(init: RunInit): Promise<RunSink>;
  readonly scenarios: CatalogSink<Scenario>;
  readonly vehicles: CatalogSink<VehicleConfig>;
}

export interface SampleWindow {
  /** Inclusive bounds, microseconds. */
  from?: number;
  to?: number;
}

/** One stored run as a writer reads it. */
export interface RunSource {
  readonly run: RunInfo;
  actors(): Promise<ActorInfo[]>;
  streams(): Promise<StreamInfo[]>;
  /** A stream's samples in time order, a batch at a time. */
  samples(stream: string, window?: SampleWindow): AsyncIterable<Sample[]>;
  /** A stream's samples as columns; only `fields` (t and step always) when given. */
  columns(
    stream: string,
    window?: SampleWindow & { fields?: readonly string[]; transient?: boolean },
  ): AsyncIterable<ColumnBatch>;
  /**
   * The same as one batch, decoded straight into its columns and not kept in the store's cache: for a
   * writer that needs a whole stream at once (a long run read stream after stream would fill the cache
   * with what it will not read again).
   */
  columnsJoined(
    stream: string,
    window?: SampleWindow & { fields?: readonly string[]; transient?: boolean },
  ): Promise<ColumnBatch>;
  /** The samples either side of t of several streams: a scene in one call. */
  bracket(args: BracketArgs): Promise<SampleBracket[]>;
  attachments(): Promise<AttachmentInfo[]>;
  attachment(name: string): Promise<Attachment | undefined>;
}

/** A catalog as a writer reads it. */
export interface CatalogSource<Item, Summary, Key> {
  get(key: Key): Promise<Item | undefined>;
  list(): Promise<Summary[]>;
}

/** What a writer reads from: the runs to write, in the order given, and the store's catalogs. */
export interface ExportSources {
  readonly runs: readonly RunSource[];
  readonly scenarios: CatalogSource<Scenario, ScenarioSummary, bigint>;
  readonly vehicles: CatalogSource<VehicleConfig, VehicleConfig, string>;
}
