import { join } from 'node:path';
import { McapIndexedReader } from '@mcap/core';
import { FileReadable } from '../../src/formats/mcap/mcap-files.js';
import { REPO_ROOT } from './paths.js';

/** OSI messages laid out as a `.osi` trace file: each prefixed by its length, 4 bytes little-endian. */
export const lengthPrefixed = (messages: Uint8Array[]): Buffer =>
  Buffer.concat(
    messages.flatMap((m) => {
      const prefix = Buffer.alloc(4);
      prefix.writeUInt32LE(m.length, 0);
      return [prefix, Buffer.from(m)];
    }),
  );

/** asam-osi-converter's disappearingVehicle trace: its MCAP, its SensorView messages and their schema. */
export async function disappearingVehicleTrace(): Promise<{
  mcap: string;
  messages: Uint8Array[];
  schema: { name: string; data: Uint8Array };
}> {
  const mcap = join(REPO_ROOT, 'test', 'fixtures', 'asam-osi-converter', 'disappearingVehicle.mcap');
  const zstd = await import('@foxglove/wasm-zstd');
  await zstd.isLoaded;
  const readable = await FileReadable.open(mcap);
  try {
    const reader = await McapIndexedReader.Initialize({
      readable,
      decompressHandlers: { zstd: (d, s) => zstd.decompress(d, Number(s)) },
    });
    const messages: Uint8Array[] = [];
    for await (const m of reader.readMessages()) messages.push(m.data);
    const schema = [...reader.schemasById.values()][0]!;
    return { mcap, messages, schema: { name: schema.name, data: schema.data } };
  } finally {
    await readable.close();
  }
}
