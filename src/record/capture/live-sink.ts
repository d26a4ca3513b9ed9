import type { CaptureSink, Snapshot } from '../../model/capture-port.js';

/** One connected client's queue of snapshots. */
export interface LiveSubscription {
  /** The next snapshot; null once the sink or the subscription is closed. */
  next(): Promise<Snapshot | null>;
  /** Snapshots dropped because this client fell behind. */
  readonly dropped: number;
  close(): void;
}

/**
 * Streams snapshots to connected clients. A slow client does not slow the capture or grow memory:
 * its queue holds at most `maxQueue` snapshots and the oldest is dropped (and counted) for a new one,
 * since a live view wants the latest picture, not a backlog.
 */
export class LiveSink implements CaptureSink {
  private readonly subscribers = new Set<Subscriber>();
  private closed = false;

  subscribe(options: { maxQueue?: number } = {}): LiveSubscription {
    const subscriber = new Subscriber(options.maxQueue ?? 4, (s) => this.subscribers.delete(s));
    if (this.closed) subscriber.close();
    else this.subscribers.add(subscriber);
    return subscriber;
  }

  get clients(): number {
    return this.subscribers.size;
  }

  async write(snapshot: Snapshot): Promise<void> {
    for (const subscriber of this.subscribers) subscriber.push(snapshot);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const subscriber of [...this.subscribers]) subscriber.close();
  }
}

class Subscriber implements LiveSubscription {
  private readonly queue: Snapshot[] = [];
  private waiter: ((s: Snapshot | null) => void) | null = null;
  private done = false;
  private readonly maxQueue: number;
  private readonly onClose: (s: Subscriber) => void;
  dropped = 0;

  constructor(maxQueue: number, onClose: (s: Subscriber) => void) {
    this.maxQueue = Math.max(1, maxQueue);
    this.onClose = onClose;
  }

  push(snapshot: Snapshot): void {
    if (this.waiter) {
      const wake = this.waiter;
      this.waiter = null;
      wake(snapshot);
      return;
    }
    if (this.queue.length >= this.maxQueue) {
      this.queue.shift();
      this.dropped++;
    }
    this.queue.push(snapshot);
  }

  next(): Promise<Snapshot | null> {
    const first = this.queue.shift();
    if (first) return Promise.resolve(first);
    if (this.done) return Promise.resolve(null);
    return new Promise((resolve) => (this.waiter = resolve));
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    this.waiter?.(null);
    this.waiter = null;
    this.onClose(this);
  }
}
