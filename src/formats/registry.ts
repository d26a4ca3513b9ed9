import type { JsonObject } from '../model/json.js';
import type { RunInfo } from '../model/run.js';
import type { StoreBackend } from '../model/store-port.js';

/**
 * The format codecs `simrec import FORMAT` and `simrec export RUN FORMAT` know. A codec is a folder
 * under src/formats and a line here; its module (and whatever heavy dependency it has) loads only
 * when it is used.
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

export const FORMAT_CODECS: Record<string, () => Promise<FormatCodec>> = {
  limsim: async () => (await import('./limsim/index.js')).limsimCodec,
  perception: async () => (await import('./perception/codec.js')).perceptionCodec,
  solo: async () => (await import('./solo/codec.js')).soloCodec,
  coco: async () => (await import('./coco/codec.js')).cocoCodec,
  yolo: async () => (await import('./yolo/codec.js')).yoloCodec,
  soda: async () => (await import('./soda/codec.js')).sodaCodec,
  didrive: async () => (await import('./didrive/index.js')).didriveCodec,
};

export const formatNames = (): string[] => Object.keys(FORMAT_CODECS);
