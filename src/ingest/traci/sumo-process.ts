import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { SimrecError } from '../../model/errors.js';
import { lowerProcessPriority } from '../../record/process-priority.js';
import { TraciClient } from './traci-client.js';

/**
 * A `sumo` process started headless for TraCI on a free port: what it wrote to stderr, whether and how
 * it exited, and why it did not start when it did not.
 */
export class SumoProcess {
  /** The last of what SUMO wrote to stderr (or, where it wrote nothing, why it ended). */
  private errorText = '';
  private spawnFailure: Error | null = null;
  private exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private readonly child: ChildProcess;
  private readonly binary: string;
  private readonly port: number;
  private readonly exitedPromise: Promise<void>;

  private constructor(binary: string, port: number, args: string[], recorderNice: number | undefined) {
    this.binary = binary;
    this.port = port;
    this.child = spawn(binary, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      // SUMO warns on every start without it, and needs it for its XML schemas.
      env: { SUMO_HOME: '/usr/share/sumo', ...process.env },
    });
    // After the spawn (SUMO is forked with this thread's priority): SUMO first, the recording after it.
    if (recorderNice) lowerProcessPriority(recorderNice);
    this.child.stderr!.on(
      'data',
      (d: Buffer) => (this.errorText = (this.errorText + d.toString('utf8')).slice(-4000)),
    );
    this.child.on('error', (error) => (this.spawnFailure = error));
    this.exitedPromise = new Promise<void>((r) =>
      this.child.on('exit', (code, signal) => ((this.exit = { code, signal }), r())),
    );
  }

  /**
   * Starts `binary` with the arguments that give it its inputs (`inputArgs`), the remote port and
   * `moreArgs` after them.
   */
  static async start(
    binary: string,
    inputArgs: readonly string[],
    moreArgs: readonly string[],
    recorderNice: number | undefined,
  ): Promise<SumoProcess> {
    const port = await freePort();
    const args = [...inputArgs, '--remote-port', String(port), '--no-step-log', 'true', ...moreArgs];
    return new SumoProcess(binary, port, args, recorderNice);
  }

  /** Connects to SUMO's TraCI port; SUMO is killed when that fails. */
  async connect(): Promise<TraciClient> {
    try {
      return await TraciClient.connect(this.port, { givenUp: () => this.failedToStart() });
    } catch (error) {
      this.kill();
      throw error;
    }
  }

  /** How SUMO exited, once it has. */
  get exited(): { code: number | null; signal: NodeJS.Signals | null } | null {
    return this.exit;
  }

  /** What SUMO wrote to stderr, or the reason noted for its end (noteFailure). */
  get stderr(): string {
    return this.errorText;
  }

  /** Why SUMO's connection failed, kept as its error text unless SUMO wrote one itself. */
  noteFailure(message: string): void {
    this.errorText ||= message;
  }

  /**
   * Waits for SUMO to exit, at most `ms`. The timer is cleared once SUMO is gone: left running, it kept
   * the process alive for seconds after the run was recorded (`simrec record sumo` sat 5 s before its
   * prompt came back).
   */
  async exitedWithin(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exitedPromise, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  }

  /** Why SUMO did not start (not installed, refused its inputs), if it did not. */
  failedToStart(): Error | null {
    const { binary, spawnFailure, exit } = this;
    if (spawnFailure && (spawnFailure as NodeJS.ErrnoException).code === 'ENOENT')
      return new SimrecError(
        'unsupported',
        `SUMO is not installed (no ${binary} on the PATH): install it with \`apt-get install sumo sumo-tools\` (Debian) and set SUMO_HOME=/usr/share/sumo, or set SUMO_BINARY`,
      );
    if (spawnFailure) return new SimrecError('io', `cannot start ${binary}: ${spawnFailure.message}`);
    if (exit)
      return new SimrecError(
        'invalid',
        `SUMO refused to start (exit ${exit.code ?? exit.signal}): ${this.errorText.trim() || 'no message'}`,
      );
    return null;
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}
