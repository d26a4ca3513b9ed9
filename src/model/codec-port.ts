import type { JsonObject } from './json.js';
import type { ExportSources, RunTarget } from './run-ports.js';
import type { Sample } from './stream.js';

/**
 * The format codec port: what `simrec import FORMAT` and `simrec export RUN FORMAT` ask of a format.
 * A codec is pure format: it reads a location into a RunTarget, or writes RunSources to a location,
 * and never sees a store (model/run-ports.ts). Adapters live in src/formats (one folder each) and are
 * listed in src/formats/registry.ts; record/import-run.ts and replay/export-run.ts are their only
 * callers, and own rollback, progress and closing.
 */

export interface CodecOptions {
  /** Something the format could not carry, or a tolerated oddity of the input, and where it is. */
  warn: (where: string, message: string) => void;
  /** Aborts the work: a codec checks it between units of work (the sinks and sources check it too). */
  signal: AbortSignal;
  /** Units of work done so far (rows, samples, files) of the total. */
  onProgress: (done: number, total: number) => void;
  /** The format's own options (see FormatOption), by key, as parsed; absent when not given. */
  settings: Readonly<Record<string, string | number | boolean>>;
}

/**
 * An option of one format (SODA.Sim's `--dataset`, say), declared in the registry so that the command
 * line can offer it without loading the codec, and refuse it for a format that has no such option.
 */
export interface FormatOption {
  /** The key in CodecOptions.settings. */
  key: string;
  /** As the command line spells it: `--dataset <id>`, `--no-extension`. */
  flag: string;
  description: string;
  parse?: (value: string) => string | number;
}

export interface WriteOptions extends CodecOptions {
  /** Replace what is at the location (`dataset` and `database` layouts; the others get a fresh path). */
  overwrite: boolean;
  /** Add to the dataset already at the location (formats that hold several runs, such as didrive). */
  append: boolean;
  /**
   * The run's ego scored frame by frame with LimSim's five metrics in LimSim's mode, computed without
   * storing them. Formats that always carry such scores (LimSim's evaluationINFO) ask for it when
   * the run has none stored; the caller supplies it, so formats need not know the evaluator.
   */
  evaluate: (run: number) => Promise<Sample[]>;
  /**
   * Keeps a small file to go beside the output (a viewer's layout, say), named after it: `out.mcap`
   * gets `out.NAME`, and `out_NAME` for a NAME given as `_NAME` (`out_criteria.json`, as ScenarioRunner
   * names its criteria). It is written only once the output is complete.
   */
  beside: (name: string, data: Uint8Array) => void;
}

/**
 * How a format's output is laid out, which tells the work layer how to write it without harm:
 * - `file`: one file, written under a temporary name and renamed when complete;
 * - `folder`: a dataset folder of its own, written whole under a temporary name and renamed;
 * - `dataset`: a folder that holds several runs and may be added to (--episode-of): the codec
 *   replaces or extends it atomically itself;
 * - `database`: a database (or its mongoexport folder) that each export adds a dataset to.
 */
export type OutputLayout = 'file' | 'folder' | 'dataset' | 'database';

export interface FormatCodec {
  name: string;
  description: string;
  /**
   * Reads one recording (or a dataset of several) into new runs of `into`. Throws on what it cannot
   * read; whatever it began is then removed by the caller. Resolves to what it read, for the report.
   */
  read?(location: string, into: RunTarget, options: CodecOptions): Promise<JsonObject>;
  /** Writes the runs to `location` (through the path the work layer gives, see OutputLayout). */
  write?(sources: ExportSources, location: string, options: WriteOptions): Promise<JsonObject>;
  output: OutputLayout;
  /** The format holds several runs in one location (as episodes, datasets...). */
  multiRun?: boolean;
  /**
   * The extension of a `file` format's files (`mcap`). With it, several runs exported at once are
   * written one file each (`run-ID.EXT`, with their companions) into a folder at the location.
   */
  fileExtension?: string;
}
