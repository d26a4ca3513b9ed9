import type { FormatCodec } from '../../model/codec-port.js';
import { importOsi } from './read-osi.js';
import { exportOsi } from './write-osi.js';

/**
 * ASAM OSI's own trace files (.osi: length-prefixed SensorView or GroundTruth messages; .txth: the same
 * in protobuf's text format), the form chosen by the file's name.
 */
export const osiCodec: FormatCodec = {
  name: 'osi',
  description:
    'ASAM OSI trace files (.osi: length-prefixed osi3.GroundTruth or osi3.SensorView messages; .txth: their text form)',
  output: 'file',
  fileExtension: 'osi',
  async read(location, into, options) {
    const result = await importOsi(into, location, {
      warn: (message) => options.warn(location, message),
      signal: options.signal,
    });
    return { messages: result.messages, type: result.type };
  },
  async write(sources, location, options) {
    const source = sources.runs[0]!;
    const result = await exportOsi(source, location, {
      warn: (message) => options.warn(`run ${source.run.id}`, message),
      onProgress: options.onProgress,
      signal: options.signal,
    });
    return { ...result };
  },
};
