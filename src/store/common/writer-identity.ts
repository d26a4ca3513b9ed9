import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { WriterIdentity } from '../../model/store-port.js';

/**
 * The start time of a process as Linux reports it (field 22 of /proc/PID/stat, in clock ticks since
 * boot). Together with the pid it names a process uniquely, even after the pid is recycled.
 * Elsewhere it is empty and only the pid is compared.
 */
function processStartOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) is in parentheses and may itself contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // A zombie (state Z) has died; it only waits for its parent to collect its exit status.
    if (fields[0] === 'Z' || fields[0] === 'X') return 'dead';
    return fields[19] ?? '';
  } catch {
    return null;
  }
}

let self: WriterIdentity | undefined;
export function currentWriter(): WriterIdentity {
  self ??= { host: hostname(), pid: process.pid, processStart: processStartOf(process.pid) ?? '' };
  return self;
}

/**
 * Whether a writer may still be running. A writer on another host cannot be checked from here, so it
 * is presumed alive: closing a live writer's run would be worse than leaving a dead one open.
 */
export function isWriterAlive(writer: WriterIdentity): boolean {
  if (writer.host !== hostname()) return true;
  if (writer.pid === process.pid) return writer.processStart === currentWriter().processStart;
  try {
    process.kill(writer.pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  const start = processStartOf(writer.pid);
  if (start === 'dead') return false;
  return start === null || writer.processStart === '' || start === writer.processStart;
}
