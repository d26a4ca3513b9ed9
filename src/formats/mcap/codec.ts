import type { FormatCodec } from '../../model/codec-port.js';
import { importMcap } from './read-mcap.js';
import { exportMcap } from './write-mcap.js';

export { importMcap, type McapImportOptions, type McapImportResult } from './read-mcap.js';
export { exportMcap, type McapExportOptions, type McapExportResult } from './write-mcap.js';

/** zstd, as Foxglove's own writers compress chunks; a WebAssembly build, loaded with the codec. */
async function zstd() {
  const module = await import('@foxglove/wasm-zstd');
  await module.isLoaded;
  return module;
}

/** MCAP with Foxglove's schemas: what Foxglove, Lichtblick and ROS 2 open. */
export const mcapCodec: FormatCodec = {
  name: 'mcap',
  description: "MCAP with Foxglove's JSON schemas (scene, map, transforms, log, images) and every stream",
  output: 'file',
  fileExtension: 'mcap',
  async read(location, into, options) {
    const { decompress } = await zstd();
    const result = await importMcap(into, location, {
      warn: (message) => options.warn(location, message),
      onProgress: options.onProgress,
      decompress: { zstd: (data, size) => decompress(data, Number(size)) },
    });
    return { source: result.source, messages: result.messages };
  },
  async write(sources, location, options) {
    const { compress } = await zstd();
    const source = sources.runs[0]!;
    const result = await exportMcap(source, location, {
      warn: (message) => options.warn(`run ${source.run.id}`, message),
      onProgress: options.onProgress,
      compress: (data) => compress(data, 3),
      beside: options.beside,
      osi: options.settings.osi === true,
    });
    return { ...result };
  },
};
