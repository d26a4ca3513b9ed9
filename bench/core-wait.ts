import { closeSync, openSync, readSync } from 'node:fs';

/**
 * How long the calling thread has waited for a core since it started, in milliseconds: the second field
 * of Linux's /proc/thread-self/schedstat (time runnable but not running). On a machine of two cores,
 * a thread preempted by the process's other threads (V8's optimising compiler, the collector's helpers)
 * or by other processes waits there; a scene that took long without any work of its own shows it
 * (performance-history.md, "What the scenes after the burst wait for").
 *
 * Read into a buffer kept from call to call, so that reading it between two scenes makes no garbage
 * of its own. Undefined where the file is not there (not Linux, or a kernel without schedstats).
 */
export class CoreWait {
  private readonly fd: number;
  private readonly buffer = Buffer.alloc(96);

  private constructor(fd: number) {
    this.fd = fd;
  }

  static open(): CoreWait | undefined {
    try {
      const wait = new CoreWait(openSync('/proc/thread-self/schedstat', 'r'));
      return wait.ms() === undefined ? (wait.close(), undefined) : wait;
    } catch {
      return undefined;
    }
  }

  /** The thread's time waiting for a core so far, or undefined when the file reads as something else. */
  ms(): number | undefined {
    const n = readSync(this.fd, this.buffer, 0, this.buffer.length, 0);
    // "run_ns wait_ns timeslices\n": the digits after the first space.
    let k = 0;
    while (k < n && this.buffer[k] !== 0x20) k++;
    let nanos = 0;
    let digits = 0;
    for (k++; k < n; k++, digits++) {
      const c = this.buffer[k]! - 0x30;
      if (c < 0 || c > 9) break;
      nanos = nanos * 10 + c;
    }
    return digits > 0 ? nanos / 1e6 : undefined;
  }

  close(): void {
    closeSync(this.fd);
  }
}
