import type { JsonObject } from '../model/json.js';
import type { RunInfo } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';
import type { Sample } from '../model/stream.js';

/**
 * The format codec port: what `simrec import FORMAT` and `simrec export RUN FORMAT` ask of a format.
 * Adapters live in src/formats (one folder each) and are listed in src/formats/registry.ts.
 */

export interface CodecOptions {
  warn?: (message: string) => void;
  /** Units of work done so far (rows, samples) of the total. */
  onProgress?: (done: number, total: number) => void;
}

export interface ExportOptions extends CodecOptions {
  /** Replace what is at the location. */
  overwrite?: boolean;
  /** Add to the dataset already at the location (formats that hold several runs, such as didrive). */
  append?: boolean;
  /**
   * The run's ego scored frame by frame with LimSim's five metrics in LimSim's mode, computed without
   * storing them. Formats that always carry such scores (LimSim's evaluationINFO) ask for it when
   * the run has none stored; the caller supplies it, so formats need not know the evaluator.
   */
  evaluate?: (run: number) => Promise<Sample[]>;
}

export interface FormatCodec {
  name: string;
  description: string;
  /** Reads one recording as a new run; on failure, no run is left in the store. */
  importRun(
    store: StoreBackend,
    location: string,
    options: CodecOptions,
  ): Promise<{ run: RunInfo; details: JsonObject }>;
  exportRun(
    store: StoreBackend,
    run: number,
    location: string,
    options: ExportOptions,
  ): Promise<{ details: JsonObject }>;
  /** Several runs into one location, for formats whose datasets hold several runs (as episodes). */
  exportRuns?(
    store: StoreBackend,
    runs: number[],
    location: string,
    options: ExportOptions,
  ): Promise<{ details: JsonObject }>;
}
