/**
 * When a transport reads from its connection. Two things stop it: the session's credit window is
 * full (the client sent more than it may have unanswered), or the client is not reading what the
 * server sends it. Every reply counts for the second: acks, errors, pongs, pings, control. Without
 * it a client that sends pings and never reads made the server buffer pongs without bound.
 *
 * A client that stays over `maxUnreadBytes` for `slowReaderMs` is a slow reader: the transport cuts
 * it, and the server ends its session (its run as `interrupted`, with everything received kept).
 */
export interface FlowLimits {
  /** Bytes sent and not yet taken by the operating system before the server stops reading. */
  maxUnreadBytes: number;
  /** How long a client may stay over that before it is cut. */
  slowReaderMs: number;
}

type Hold = 'window' | 'unread';

export class ConnectionFlow {
  private readonly holds = new Set<Hold>();
  private unread = 0;
  private slowTimer: NodeJS.Timeout | null = null;
  private readonly io: { pause(): void; resume(): void };
  private readonly limits: FlowLimits;
  private readonly onSlowReader: () => void;

  constructor(io: { pause(): void; resume(): void }, limits: FlowLimits, onSlowReader: () => void) {
    this.io = io;
    this.limits = limits;
    this.onSlowReader = onSlowReader;
  }

  /** Bytes the transport holds for the client, not yet written to the socket. */
  get unreadBytes(): number {
    return this.unread;
  }

  hold(reason: Hold): void {
    if (this.holds.size === 0) this.io.pause();
    this.holds.add(reason);
  }

  release(reason: Hold): void {
    if (!this.holds.delete(reason)) return;
    if (this.holds.size === 0) this.io.resume();
  }

  /** `bytes` were handed to the transport for the client. */
  queued(bytes: number): void {
    this.unread += bytes;
    if (this.unread > this.limits.maxUnreadBytes && !this.holds.has('unread')) {
      this.hold('unread');
      this.slowTimer = setTimeout(() => this.onSlowReader(), this.limits.slowReaderMs);
      this.slowTimer.unref();
    }
  }

  /** `bytes` of what was queued went out to the operating system. */
  written(bytes: number): void {
    this.unread -= bytes;
    // Half the limit: reading resumes once the client has caught up, not at every other message.
    if (this.holds.has('unread') && this.unread <= this.limits.maxUnreadBytes / 2) {
      this.clearTimer();
      this.release('unread');
    }
  }

  /** The connection closed: no timer may fire for it. */
  stop(): void {
    this.clearTimer();
  }

  private clearTimer(): void {
    if (this.slowTimer) clearTimeout(this.slowTimer);
    this.slowTimer = null;
  }
}
