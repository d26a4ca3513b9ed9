/** OSI messages laid out as a `.osi` trace file: each prefixed by its length, 4 bytes little-endian. */
export const lengthPrefixed = (messages: Uint8Array[]): Buffer =>
  Buffer.concat(
    messages.flatMap((m) => {
      const prefix = Buffer.alloc(4);
      prefix.writeUInt32LE(m.length, 0);
      return [prefix, Buffer.from(m)];
    }),
  );
