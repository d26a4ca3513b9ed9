import type { Attachment, AttachmentInfo } from '../../model/attachment.js';
import type { Scenario, ScenarioSummary, VehicleConfig } from '../../model/catalog.js';
import type { ColumnBatch, SampleEntry } from '../../model/columns.js';
import type { ActorInfo, ActorPresence, EndReason, RunInfo, RunSummary } from '../../model/run.js';
import type {
  BracketArgs,
  CatalogPort,
  ColumnAppend,
  IntegrityReport,
  LatestEntriesArgs,
  ListOptions,
  ListRunsArgs,
  ReadColumnsArgs,
  ReadSamplesArgs,
  SampleBracket,
  StoreBackend,
  WriterIdentity,
} from '../../model/store-port.js';
import type { Sample, StreamInfo, StreamSchema } from '../../model/stream.js';
import { latestEntriesViaBrackets, readSamplesViaColumns, sampleBracketViaMany } from './sample-reads.js';

/** A backend's runs, actors and streams. */
export type RunsPart = Pick<
  StoreBackend,
  | 'createRun'
  | 'getRun'
  | 'listRuns'
  | 'endRun'
  | 'deleteRun'
  | 'runVersions'
  | 'streamVersions'
  | 'closeAbandonedRuns'
  | 'putActors'
  | 'putPresence'
  | 'listActors'
  | 'putStreams'
  | 'listStreams'
>;

/** A backend's samples: written, and read as columns and brackets. */
export type SamplesPart = Pick<
  StoreBackend,
  'appendColumns' | 'putDerivedStream' | 'readColumns' | 'bracketMany'
> &
  Partial<Pick<StoreBackend, 'latestEntries'>>;

/** A backend's attachments. */
export type AttachmentsPart = Pick<
  StoreBackend,
  'putAttachment' | 'getAttachment' | 'listAttachments' | 'attachmentsVersion'
>;

/**
 * A store backend whose work is split by job (as the SQLite and MongoDB backends are): the port's
 * methods handed to the part that does each, samples as objects and single brackets built on the
 * columns and brackets its samples part reads (sample-reads.ts). A backend names its parts, and
 * implements the rest of the port itself.
 */
export abstract class BackendOfParts implements StoreBackend {
  abstract readonly kind: string;
  abstract readonly location: string;
  abstract readonly scenarios: CatalogPort<Scenario, ScenarioSummary, bigint>;
  abstract readonly vehicles: CatalogPort<VehicleConfig, VehicleConfig, string>;
  protected abstract readonly runs: RunsPart;
  protected abstract readonly samples: SamplesPart;
  protected abstract readonly attachments: AttachmentsPart;

  abstract readColumnsJoined(args: ReadColumnsArgs): Promise<ColumnBatch>;
  abstract checkIntegrity(options?: { repair?: boolean }): Promise<IntegrityReport>;
  abstract close(): Promise<void>;

  // ---- runs ----------------------------------------------------------------------------------------

  createRun(run: Omit<RunInfo, 'id'>, writer: WriterIdentity): Promise<RunInfo> {
    return this.runs.createRun(run, writer);
  }

  getRun(id: number): Promise<RunInfo | undefined> {
    return this.runs.getRun(id);
  }

  listRuns(args: ListRunsArgs = {}): Promise<RunSummary[]> {
    return this.runs.listRuns(args);
  }

  endRun(id: number, end: { end: number; endReason: EndReason }): Promise<RunInfo> {
    return this.runs.endRun(id, end);
  }

  deleteRun(id: number): Promise<boolean> {
    return this.runs.deleteRun(id);
  }

  runVersions(runs: readonly number[]): Promise<Map<number, string>> {
    return this.runs.runVersions(runs);
  }

  streamVersions(run: number): Promise<Map<string, string>> {
    return this.runs.streamVersions(run);
  }

  closeAbandonedRuns(isAlive: (writer: WriterIdentity) => boolean): Promise<number[]> {
    return this.runs.closeAbandonedRuns(isAlive);
  }

  // ---- actors and streams --------------------------------------------------------------------------

  putActors(run: number, actors: ActorInfo[]): Promise<void> {
    return this.runs.putActors(run, actors);
  }

  putPresence(run: number, presence: ActorPresence[]): Promise<void> {
    return this.runs.putPresence(run, presence);
  }

  listActors(run: number, options?: ListOptions): Promise<ActorInfo[]> {
    return this.runs.listActors(run, options);
  }

  putStreams(run: number, streams: StreamSchema[]): Promise<void> {
    return this.runs.putStreams(run, streams);
  }

  listStreams(run: number, options?: ListOptions): Promise<StreamInfo[]> {
    return this.runs.listStreams(run, options);
  }

  // ---- samples -------------------------------------------------------------------------------------

  appendColumns(run: number, appends: ColumnAppend[], presence?: ActorPresence[]): Promise<void> {
    return this.samples.appendColumns(run, appends, presence);
  }

  putDerivedStream(run: number, schema: StreamSchema, samples: Sample[]): Promise<void> {
    return this.samples.putDerivedStream(run, schema, samples);
  }

  readColumns(args: ReadColumnsArgs): AsyncIterable<ColumnBatch> {
    return this.samples.readColumns(args);
  }

  readSamples(args: ReadSamplesArgs): AsyncIterable<Sample[]> {
    return readSamplesViaColumns(this, args);
  }

  bracketMany(run: number, args: BracketArgs): Promise<SampleBracket[]> {
    return this.samples.bracketMany(run, args);
  }

  latestEntries(run: number, args: LatestEntriesArgs): Promise<(SampleEntry | undefined)[]> {
    return this.samples.latestEntries
      ? this.samples.latestEntries(run, args)
      : latestEntriesViaBrackets(this, run, args);
  }

  sampleBracket(run: number, stream: string, t: number): Promise<SampleBracket> {
    return sampleBracketViaMany(this, run, stream, t);
  }

  // ---- attachments ---------------------------------------------------------------------------------

  putAttachment(run: number, a: Attachment): Promise<void> {
    return this.attachments.putAttachment(run, a);
  }

  getAttachment(run: number, name: string): Promise<Attachment | undefined> {
    return this.attachments.getAttachment(run, name);
  }

  listAttachments(run: number): Promise<AttachmentInfo[]> {
    return this.attachments.listAttachments(run);
  }

  attachmentsVersion(run: number): Promise<string | undefined> {
    return this.attachments.attachmentsVersion(run);
  }
}
