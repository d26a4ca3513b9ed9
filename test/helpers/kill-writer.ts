import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from './paths.js';

/**
 * Starts crash-writer.ts recording into `location` in batches of `batch` samples, and kills it with
 * SIGKILL after its `killAfterAcks`-th acknowledgement. Returns the run and how much was acknowledged.
 */
export async function killWriterAfter(
  location: string,
  options: { batch: number; killAfterAcks: number; chunkSamples?: number },
): Promise<{ runId: number; acked: number; acks: number }> {
  const args = [
    join(REPO_ROOT, 'dist', 'test', 'helpers', 'crash-writer.js'),
    location,
    String(options.batch),
  ];
  if (options.chunkSamples) args.push(String(options.chunkSamples));
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let acked = 0;
  let acks = 0;
  let runId = 0;
  for await (const line of createInterface({ input: child.stdout })) {
    const [word, value] = line.split(' ');
    if (word === 'run') runId = Number(value);
    if (word === 'ack') {
      acked = Number(value);
      if (++acks >= options.killAfterAcks) {
        child.kill('SIGKILL');
        break;
      }
    }
  }
  await exited;
  return { runId, acked, acks };
}
