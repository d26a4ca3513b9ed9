import type { CodecOptions, FormatCodec } from '../../model/codec-port.js';
import type { RunTarget } from '../../model/run-ports.js';
import { exportPerception, importPerception, type ImportOptions, type ImportResult } from './index.js';

/** A Perception-family reader (legacy or SOLO) as a codec's read. */
export const perceptionRead =
  (read: (into: RunTarget, dir: string, options: ImportOptions) => Promise<ImportResult>) =>
  async (location: string, into: RunTarget, options: CodecOptions) => {
    const result = await read(into, location, { onProgress: options.onProgress, signal: options.signal });
    for (const w of result.warnings) options.warn(w.where, w.message);
    return {
      captures: result.captures,
      metrics: result.metrics,
      sensors: result.sensors,
      warnings: result.warnings.length,
    };
  };

/** Unity Perception's legacy dataset through `simrec import/export`. */
export const perceptionCodec: FormatCodec = {
  name: 'perception',
  description: "Unity Perception's legacy dataset (Dataset*/captures_*.json, definitions, images)",
  output: 'folder',
  read: perceptionRead(importPerception),
  async write(sources, location, options) {
    const result = await exportPerception(sources.runs[0]!, location, {
      warn: options.warn,
      signal: options.signal,
      onProgress: options.onProgress,
    });
    return {
      captures: result.captures,
      metrics: result.metrics,
      files: result.files,
      jsonFiles: result.jsonFiles,
    };
  },
};
