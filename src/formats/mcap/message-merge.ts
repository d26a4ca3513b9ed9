/*
 * The export's channels merged into one stream of messages in time order, as MCAP readers want them:
 * each channel encodes a message only when the merge asks for it, so the encoded messages of a run
 * are never all in memory at once.
 */

/**
 * A message as a channel gives it: its bytes, or the JSON text of a JSON channel's message, which the
 * writer encodes into a buffer of its own (a buffer of its own for every message of a long run is
 * memory the process touches for the first time, again and again: performance-history.md).
 */
export type MessageData = Uint8Array | string;

/** One channel's messages in time order, produced as the merge asks for them. */
export interface MessageSource {
  channel: number;
  /** The messages it gives in all. */
  readonly count: number;
  /** The time of the message `take` would give, or undefined when done. */
  peek(): number | undefined;
  /** The next message; a promise for one that must be read first (a camera's image). */
  take(): MessageData | Promise<MessageData>;
}

export function listSource(
  channel: number,
  times: ArrayLike<number>,
  encode: (t: number, i: number) => MessageData | Promise<MessageData>,
): MessageSource {
  let i = 0;
  return {
    channel,
    count: times.length,
    peek: () => times[i],
    take: () => {
      const data = encode(times[i]!, i);
      i++;
      return data;
    },
  };
}

/**
 * Writes the sources' messages in time order (a heap of the sources by their next message's time).
 * `advance` is awaited before the first message of each time is encoded: what the encoders read at or
 * before it (a window of each stream, see StreamWalk) is read then.
 */
export async function mergeInTimeOrder(
  sources: readonly MessageSource[],
  write: (channel: number, t: number, data: MessageData) => Promise<void>,
  advance?: (t: number) => Promise<void>,
): Promise<void> {
  const heap = sources.filter((s) => s.peek() !== undefined);
  const before = (a: MessageSource, b: MessageSource): boolean =>
    a.peek()! < b.peek()! || (a.peek() === b.peek() && a.channel < b.channel);
  const down = (i: number): void => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  };
  for (let i = Math.floor(heap.length / 2) - 1; i >= 0; i--) down(i);
  let at = -Infinity;
  while (heap.length) {
    const top = heap[0]!;
    const t = top.peek()!;
    if (t !== at) {
      await advance?.(t);
      at = t;
    }
    // Awaited only when it is a promise: a run's millions of other messages need no turn of the loop.
    const data = top.take();
    await write(top.channel, t, data instanceof Promise ? await data : data);
    if (top.peek() === undefined) {
      heap[0] = heap[heap.length - 1]!;
      heap.pop();
    }
    if (heap.length) down(0);
  }
}
