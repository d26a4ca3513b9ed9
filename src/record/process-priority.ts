import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * What `simrec record sumo` lowers its priority by: SUMO first, the recording in its idle time, ran
 * faster and was preempted far less than at equal priority (performance-history.md).
 */
export const SUMO_RECORDER_NICE = 5;

/** The highest niceness (the lowest priority) a thread can have. */
const LOWEST = 19;

/**
 * Lowers the scheduling priority of every thread of this process by `by` (their niceness raised, at
 * most to 19), so that a simulator this process started before calling it keeps its own and runs
 * first: on a machine with few cores the recording then works in the simulator's idle time instead of
 * taking turns with it (at the same priority SUMO was preempted again and again by this process's
 * threads, V8's collector among them).
 *
 * Linux gives each thread its own niceness: every thread there now (V8's and libuv's included) is
 * lowered, and threads started later (a store's writer thread) inherit the lowered niceness of the
 * thread that starts them. Elsewhere the process's priority is lowered. Without privileges a priority
 * cannot be raised again: this is for a process of its own (`simrec record sumo`), not a library's
 * caller. Returns the threads lowered (0 when the system refused: recording goes on as it was).
 */
export function lowerProcessPriority(by: number): number {
  if (!(by > 0)) return 0;
  const lower = (id: number): boolean => {
    try {
      setPriority(id, Math.min(LOWEST, getPriority(id) + by));
      return true;
    } catch {
      return false; // the thread has ended, or the system says no
    }
  };
  let threads: string[];
  try {
    threads = readdirSync('/proc/self/task');
  } catch {
    return lower(0) ? 1 : 0;
  }
  let lowered = 0;
  for (const tid of threads) if (lower(Number(tid))) lowered++;
  return lowered;
}
