import type { CodecOptions, FormatCodec } from '../model/codec-port.js';
import type { Scenario, VehicleConfig } from '../model/catalog.js';
import { invalid } from '../model/errors.js';
import type { JsonObject } from '../model/json.js';
import type { CatalogSink, RunSink, RunTarget } from '../model/run-ports.js';
import type { RunInfo, RunInit } from '../model/run.js';
import type { CatalogPort, StoreBackend } from '../model/store-port.js';
import { loadCodec } from '../formats/registry.js';
import { removeFailedRun } from './failed-run.js';
import { RunRecorder } from './run-recorder.js';

/**
 * Connects a format's reader to a store: the only caller of `codec.read`. It gives the reader a
 * RunTarget over the store and keeps "no run left after a failure" for every format at once: if the
 * reader throws or the signal aborts, every run it began is deleted and every catalog entry it put
 * is taken back (an entry it replaced gets its old value again).
 */

export interface ImportOptions {
  warn?: (where: string, message: string) => void;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
  /** The format's own options (FormatOption), by key. */
  settings?: Readonly<Record<string, string | number | boolean>>;
  /** Every run read gets this description instead of the one the format gives. */
  description?: string;
}

export interface ImportResult {
  /** The runs read, in the order the reader began them. */
  runs: RunInfo[];
  /** What the reader says it read (rows per table, episodes, captures...). */
  details: JsonObject;
}

export async function importRecording(
  store: StoreBackend,
  format: FormatCodec | string,
  location: string,
  options: ImportOptions = {},
): Promise<ImportResult> {
  const codec = typeof format === 'string' ? await loadCodec(format) : format;
  const read = codec.read?.bind(codec);
  if (!read)
    // A direction the format does not have is a usage mistake (exit 2), not a failure.
    throw invalid(`${codec.name}: import is not supported (the format is written by simrec only)`);
  return withImportTarget(store, options, (into, codecOptions) => read(location, into, codecOptions)).then(
    ({ runs, result }) => ({ runs, details: result }),
  );
}

/**
 * Runs `work` with a RunTarget over `store`; on failure undoes what it wrote, then rethrows. Runs the
 * work left open are ended as the reader's data ends. Library users and tests call readers this way.
 */
export async function withImportTarget<T>(
  store: StoreBackend,
  options: ImportOptions,
  work: (into: RunTarget, options: CodecOptions) => Promise<T>,
): Promise<{ runs: RunInfo[]; result: T }> {
  const signal = options.signal ?? new AbortController().signal;
  const target = new StoreTarget(store, signal, options.description);
  const codecOptions: CodecOptions = {
    warn: options.warn ?? (() => {}),
    signal,
    onProgress: options.onProgress ?? (() => {}),
    settings: options.settings ?? {},
  };
  try {
    signal.throwIfAborted();
    const result = await work(target, codecOptions);
    signal.throwIfAborted();
    return { runs: await target.finish(), result };
  } catch (error) {
    throw await target.rollback(error);
  }
}

class StoreTarget implements RunTarget {
  private readonly sinks: RecorderSink[] = [];
  readonly scenarios: UndoableCatalog<Scenario, bigint>;
  readonly vehicles: UndoableCatalog<VehicleConfig, string>;

  private readonly store: StoreBackend;
  private readonly signal: AbortSignal;
  private readonly description: string | undefined;

  constructor(store: StoreBackend, signal: AbortSignal, description: string | undefined) {
    this.store = store;
    this.signal = signal;
    this.description = description;
    this.scenarios = new UndoableCatalog(store.scenarios, (s) => s.id, signal);
    this.vehicles = new UndoableCatalog(store.vehicles, (v) => v.name, signal);
  }

  async beginRun(init: RunInit): Promise<RunSink> {
    this.signal.throwIfAborted();
    const named = this.description === undefined ? init : { ...init, description: this.description };
    const sink = new RecorderSink(await RunRecorder.begin(this.store, named), this.signal);
    this.sinks.push(sink);
    return sink;
  }

  /** The runs as they ended; a run the reader left open ends where its data ends. */
  async finish(): Promise<RunInfo[]> {
    const runs: RunInfo[] = [];
    for (const sink of this.sinks) runs.push(sink.ended ?? (await sink.end('user_request')));
    return runs;
  }

  /** Removes the runs begun; returns `error`, saying which runs could not be removed (a full disk). */
  async rollback(error: unknown): Promise<unknown> {
    let outcome = error;
    for (const sink of this.sinks) {
      // Ended so that it can be removed: removeFailedRun says when the run could not be.
      if (!sink.ended) await sink.recorder.end('inner_error').catch(() => {});
      outcome = await removeFailedRun(this.store, sink.run.id, outcome);
    }
    await this.vehicles.undo();
    await this.scenarios.undo();
    return outcome;
  }
}

/** A RunRecorder as a reader's sink: every call first checks that the import was not aborted. */
class RecorderSink implements RunSink {
  ended: RunInfo | null = null;
  readonly recorder: RunRecorder;
  private readonly signal: AbortSignal;
  constructor(recorder: RunRecorder, signal: AbortSignal) {
    this.recorder = recorder;
    this.signal = signal;
  }

  get run(): RunInfo {
    return this.ended ?? this.recorder.run;
  }
  private check(): RunRecorder {
    this.signal.throwIfAborted();
    return this.recorder;
  }
  declareActors: RunSink['declareActors'] = (decls) => this.check().declareActors(decls);
  declareStreams: RunSink['declareStreams'] = (decls) => this.check().declareStreams(decls);
  appendMany: RunSink['appendMany'] = (appends) => this.check().appendMany(appends);
  appendColumns: RunSink['appendColumns'] = (stream, batch) => this.check().appendColumns(stream, batch);
  appendFrame: RunSink['appendFrame'] = (name, frame) => this.check().appendFrame(name, frame);
  leave: RunSink['leave'] = (actor, t) => this.check().leave(actor, t);
  appear: RunSink['appear'] = (actor, t) => this.check().appear(actor, t);
  setPresence: RunSink['setPresence'] = (actor, intervals) => this.check().setPresence(actor, intervals);
  attach: RunSink['attach'] = (attachment) => this.check().attach(attachment);
  flush: RunSink['flush'] = () => this.check().flush();
  streams: RunSink['streams'] = async () => {
    await this.check().flush();
    return this.recorder.store.listStreams(this.recorder.run.id);
  };
  async end(...args: Parameters<RunSink['end']>): Promise<RunInfo> {
    this.ended = await this.check().end(...args);
    return this.ended;
  }
}

/** A catalog that remembers what it replaced, to put it back if the import fails. */
class UndoableCatalog<Item, Key> implements CatalogSink<Item> {
  private readonly before = new Map<Key, Item | undefined>();
  private readonly catalog: CatalogPort<Item, unknown, Key>;
  private readonly keyOf: (item: Item) => Key;
  private readonly signal: AbortSignal;
  constructor(catalog: CatalogPort<Item, unknown, Key>, keyOf: (item: Item) => Key, signal: AbortSignal) {
    this.catalog = catalog;
    this.keyOf = keyOf;
    this.signal = signal;
  }

  async put(item: Item): Promise<void> {
    this.signal.throwIfAborted();
    const key = this.keyOf(item);
    if (!this.before.has(key)) this.before.set(key, await this.catalog.get(key));
    await this.catalog.put(item);
  }

  async undo(): Promise<void> {
    // Undone after an import failed, as far as it can be: that failure is the one to report.
    for (const [key, old] of this.before) {
      if (old === undefined) await this.catalog.delete(key).catch(() => {});
      else await this.catalog.put(old).catch(() => {});
    }
  }
}
