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
 * Writes the sources' messages in time order (a heap of the sources by their next message's time, then
 * their channel). `advance` is awaited before the first message of each time is encoded: what the
 * encoders read at or before it (a window of each stream, see StreamWalk) is read then.
 */
export async function mergeInTimeOrder(
  sources: readonly MessageSource[],
  write: (channel: number, t: number, data: MessageData) => Promise<void>,
  advance?: (t: number) => Promise<void>,
): Promise<void> {
  const live = sources.filter((s) => s.peek() !== undefined);
  // Each source's next time and channel kept in arrays beside the heap of their indices: a run's
  // millions of messages each cost a few comparisons, which then read numbers, not the sources.
  const next = Float64Array.from(live, (s) => s.peek()!);
  const channel = Float64Array.from(live, (s) => s.channel);
  const heap = Int32Array.from(live, (_, k) => k);
  let size = heap.length;
  const before = (a: number, b: number): boolean =>
    next[a]! < next[b]! || (next[a] === next[b] && channel[a]! < channel[b]!);
  const down = (i: number): void => {
    const moved = heap[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= size) break;
      const r = l + 1;
      const child = r < size && before(heap[r]!, heap[l]!) ? r : l;
      if (!before(heap[child]!, moved)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = moved;
  };
  for (let i = Math.floor(size / 2) - 1; i >= 0; i--) down(i);
  let at = -Infinity;
  while (size > 0) {
    const k = heap[0]!;
    const top = live[k]!;
    const t = next[k]!;
    if (t !== at) {
      await advance?.(t);
      at = t;
    }
    // Awaited only when it is a promise: a run's millions of other messages need no turn of the loop.
    const data = top.take();
    await write(top.channel, t, data instanceof Promise ? await data : data);
    const after = top.peek();
    if (after === undefined) heap[0] = heap[--size]!;
    else next[k] = after;
    if (size > 0) down(0);
  }
}
