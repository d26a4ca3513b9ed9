import { execFile, spawnSync } from 'node:child_process';
import { SIMREC_BIN } from './paths.js';

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `simrec` command as a user would, with output piped (so no progress bars). */
export function runCli(args: string[], env: Record<string, string> = {}, input?: string): CliResult {
  const result = spawnSync(process.execPath, [SIMREC_BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    input,
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Runs a command that must succeed and parses its JSON output. */
export function cliJson<T = unknown>(args: string[], env: Record<string, string> = {}): T {
  const r = runCli(args, env);
  if (r.status !== 0) throw new Error(`simrec ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/**
 * cliJson without blocking this process: for tests whose server runs in it, which a synchronous
 * command would freeze (its keep-alive connections then time out under the client's feet).
 */
export async function cliJsonAsync<T = unknown>(
  args: string[],
  env: Record<string, string> = {},
): Promise<T> {
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [SIMREC_BIN, ...args],
      { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000, maxBuffer: 64 << 20 },
      (error, out, err) =>
        error ? reject(new Error(`simrec ${args.join(' ')} failed: ${error.message} ${err}`)) : resolve(out),
    ),
  );
  return JSON.parse(stdout) as T;
}
