import type { Attachment, AttachmentInfo } from './attachment.js';
import type { Scenario, ScenarioSummary, VehicleConfig } from './catalog.js';
import type { ActorInfo, ActorPresence, EndReason, RunInfo, RunSummary } from './run.js';
import type { ColumnBatch, EntryHead, SampleEntry } from './columns.js';
import type { Sample, StreamInfo, StreamSchema } from './stream.js';

/**
 * The process that writes a run. A backend keeps it with the run so that whoever opens the store next
 * can tell a live writer from a dead one, and close a dead writer's run as `interrupted`.
 */
export interface WriterIdentity {
  host: string;
  pid: number;
  /** The process's start time as the OS reports it (guards against a recycled pid). */
  processStart: string;
}

export interface ListRunsArgs {
  /** Newest first when true (the default). */
  newestFirst?: boolean;
  limit?: number;
}

export interface ReadSamplesArgs {
  run: number;
  stream: string;
  /** Inclusive bounds in microseconds. */
  from?: number;
  to?: number;
  signal?: AbortSignal;
  /**
   * Read once (a writer going through a run, a server's answer): what it reads is not kept in the
   * store's caches, which keep serving what they held (SQLite's reads; a backend may ignore it).
   */
  transient?: boolean;
}

export interface ReadColumnsArgs extends ReadSamplesArgs {
  /** Only these fields (t and step always); all when absent. Blocks are decoded only for these. */
  fields?: readonly string[];
}

/** How a read of one moment of many streams uses the store's caches (bracketMany, latestEntries). */
export interface MomentReadOptions {
  /**
   * false: only the blocks holding the moment are decoded and kept, never a whole chunk nor the chunks
   * around it; for a reader that asks about a moment now and then while others read the run (a server's
   * scene answers, which a page's inspector asks for as it plays). True when absent: a reader moving
   * about a run has whole chunks decoded at its second look at one (ChunkCache's read-ahead).
   */
  readAhead?: boolean;
}

export interface BracketArgs extends MomentReadOptions {
  /** Stream ids; the answer has one bracket per stream, in this order. */
  streams: readonly string[];
  t: number;
  /** Only these fields in the samples; all when absent. */
  fields?: readonly string[];
  /** The first sample after t as well (to interpolate); true when absent. */
  after?: boolean;
}

/** How listActors and listStreams answer. */
export interface ListOptions {
  /**
   * The store's own list, frozen (its objects too), where it keeps one: for a caller that only reads it,
   * as often as a scene is asked for. Without it each call gives copies the caller may change.
   */
  shared?: boolean;
}

/** What latestEntries reads: each stream's latest sample at t, made as an entry with its head. */
export interface LatestEntriesArgs extends MomentReadOptions {
  /** Stream ids; the answer has one entry (or undefined: no sample at or before t) per stream. */
  streams: readonly string[];
  /** The id and kind each stream's entry begins with, one per stream. */
  heads: readonly EntryHead[];
  t: number;
}

export interface SampleBracket {
  /** The latest sample at or before t. */
  before?: Sample;
  /** The earliest sample after t. */
  after?: Sample;
}

/** One stream's share of an atomic write, as sample objects (RunRecorder's convenience form). */
export interface StreamAppend {
  stream: string;
  samples: Sample[];
}

/** One stream's share of an atomic write, as columns validated by the model (see model/columns.ts). */
export interface ColumnAppend {
  stream: string;
  batch: ColumnBatch;
}

export interface CatalogPort<Item, Summary, Key> {
  put(item: Item): Promise<void>;
  get(key: Key): Promise<Item | undefined>;
  list(): Promise<Summary[]>;
  /** Resolves true if something was deleted. */
  delete(key: Key): Promise<boolean>;
}

/**
 * The store port: what every backend (SQLite, MongoDB, ...) implements, and all the rest of simrec
 * uses. Backends receive values the model has already validated; they own durability, chunking and
 * indexing. Every method that writes resolves only once the write is durable.
 */
export interface StoreBackend {
  /** `sqlite`, `mongodb`, ... */
  readonly kind: string;
  /** The file path or URL it was opened with (credentials removed). */
  readonly location: string;
  /**
   * True when the writes of a recording (putActors, putStreams, appendColumns) take effect in the order
   * they were called even when a call comes before the last one's promise has settled: the backend
   * hands them, at the call, to one queue that one writer works through. A recorder then passes each
   * write on at once instead of waiting for the one before (RunRecorder). Absent or false: a write
   * may overtake one still in flight (a driver with a pool of connections), so the caller waits.
   */
  readonly keepsWriteOrder?: boolean;

  createRun(run: Omit<RunInfo, 'id'>, writer: WriterIdentity): Promise<RunInfo>;
  getRun(id: number): Promise<RunInfo | undefined>;
  listRuns(args?: ListRunsArgs): Promise<RunSummary[]>;
  endRun(id: number, end: { end: number; endReason: EndReason }): Promise<RunInfo>;
  deleteRun(id: number): Promise<boolean>;

  /** Inserts or replaces actors by id; an actor's presence is kept (it is putPresence's). */
  putActors(run: number, actors: ActorInfo[]): Promise<void>;
  /**
   * Replaces declared actors' presence intervals (already checked by the model), in one durable write.
   * Allowed on a closed run: an importer may know who was where only once it has read everything.
   */
  putPresence(run: number, presence: ActorPresence[]): Promise<void>;
  listActors(run: number, options?: ListOptions): Promise<ActorInfo[]>;

  /** Inserts or replaces stream schemas by id; counts and time ranges are kept. */
  putStreams(run: number, streams: StreamSchema[]): Promise<void>;
  listStreams(run: number, options?: ListOptions): Promise<StreamInfo[]>;

  /**
   * Appends columns to several streams in one atomic, durable write. Samples are in time order and
   * already validated (model/columns.ts); the backend may keep the arrays until the promise settles.
   * `presence`: actors' presence changed with these samples (a vehicle that left), kept as putPresence
   * keeps it: in the same transaction where the backend has one, else right after the samples.
   */
  appendColumns(run: number, appends: ColumnAppend[], presence?: ActorPresence[]): Promise<void>;
  /**
   * Writes a derived stream whole (metrics computed after the run, by `simrec eval` say), replacing
   * any earlier version of it, in one atomic, durable write. Unlike appends it is allowed on a closed
   * run: derived data does not change what was recorded.
   */
  putDerivedStream(run: number, schema: StreamSchema, samples: Sample[]): Promise<void>;
  /**
   * Yields the stream's samples in time order as columns, a chunk at a time. The arrays and the JSON
   * values in them are the caller's to change (copies of what the store caches).
   */
  readColumns(args: ReadColumnsArgs): AsyncIterable<ColumnBatch>;
  /**
   * The same samples as one batch (what readColumns yields, joined): a trajectory, a plot's series.
   * The caller's, as readColumns' batches are.
   */
  readColumnsJoined(args: ReadColumnsArgs): Promise<ColumnBatch>;
  /** Yields the stream's samples in time order, a batch at a time (objects built from readColumns). */
  readSamples(args: ReadSamplesArgs): AsyncIterable<Sample[]>;
  /** The samples either side of t, for each of several streams: the scene at t in one call. */
  bracketMany(run: number, args: BracketArgs): Promise<SampleBracket[]>;
  /**
   * Each stream's latest sample at or before t as a scene's entry, `{ id, kind, t, ...fields }` (no
   * step), made in one object: what a scene asks for, without a sample made and copied per actor.
   */
  latestEntries(run: number, args: LatestEntriesArgs): Promise<(SampleEntry | undefined)[]>;
  /** The samples either side of t, for one stream. */
  sampleBracket(run: number, stream: string, t: number): Promise<SampleBracket>;

  /**
   * A token per run (of those given that exist) that changes whenever anything a run's tables are made
   * of changes: the run's row, its actors and their presence, its streams' schemas and counters, any
   * chunk written, replaced or removed. Equal tokens: the same tables (what keeps them in step).
   */
  runVersions(runs: readonly number[]): Promise<Map<number, string>>;
  /**
   * A token per stream of a run (by stream id) that changes whenever its chunks do: one written,
   * merged, replaced or removed (a stream deleted and declared again has new chunks). With its schema
   * and counters it tells which of a run's tables changed, so that only those are written again.
   */
  streamVersions(run: number): Promise<Map<string, string>>;

  putAttachment(run: number, attachment: Attachment): Promise<void>;
  getAttachment(run: number, name: string): Promise<Attachment | undefined>;
  listAttachments(run: number): Promise<AttachmentInfo[]>;
  /**
   * A token that changes whenever a run's attachments do (one put, or put again under its name), by
   * any process; undefined for a run that does not exist. What lets a reader keep a run's list of
   * attachments (a camera's hour is a hundred thousand) until it changes: runVersions leaves
   * attachments out, being about the run's tables.
   */
  attachmentsVersion(run: number): Promise<string | undefined>;

  readonly scenarios: CatalogPort<Scenario, ScenarioSummary, bigint>;
  readonly vehicles: CatalogPort<VehicleConfig, VehicleConfig, string>;

  /**
   * Closes, as `interrupted`, every run still marked recording whose writer `isAlive` says is gone.
   * The run's end is its last stored sample (or its begin). Returns the ids closed.
   */
  closeAbandonedRuns(isAlive: (writer: WriterIdentity) => boolean): Promise<number[]>;

  /**
   * Checks that the store is sound: the backend's own check (SQLite's integrity_check), every chunk
   * decodes, every stream's counters match its chunks. With `repair`, counters are recomputed and
   * chunks that cannot be decoded are removed (and reported); nothing readable is ever removed.
   */
  checkIntegrity(options?: { repair?: boolean }): Promise<IntegrityReport>;
  /**
   * Readies the read path for a reader that lives long (a server, before its first view): best effort,
   * optional. A command that opens, asks once and exits does not call it.
   */
  warm?(): void;

  close(): Promise<void>;
}

export interface IntegrityProblem {
  /** Where: `run 3 stream ego/state`, `chunk 17`, `database`. */
  where: string;
  problem: string;
  repaired: boolean;
}

export interface IntegrityReport {
  ok: boolean;
  runs: number;
  streams: number;
  chunks: number;
  samples: number;
  problems: IntegrityProblem[];
}
