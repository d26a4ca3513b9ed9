import { McapIndexedReader } from '@mcap/core';
import * as zstd from '@foxglove/wasm-zstd';
import { FileReadable } from '../../src/formats/mcap/mcap-files.js';

/** @mcap/core's indexed reader on a file (zstd chunks), as Foxglove's own tools open MCAP. */
export async function openMcap(
  file: string,
): Promise<{ reader: McapIndexedReader; close: () => Promise<void> }> {
  await zstd.isLoaded;
  const readable = await FileReadable.open(file);
  const reader = await McapIndexedReader.Initialize({
    readable,
    decompressHandlers: { zstd: (data, size) => zstd.decompress(data, Number(size)) },
  });
  return { reader, close: () => readable.close() };
}
