import type { Command } from 'commander';
import type { StoreBackend } from '../../model/store-port.js';
import { DEFAULT_PORT, startServer } from '../../server/start-server.js';
import { openStore, resolveStoreLocation } from '../../store/open-store.js';
import { parsePositive } from '../args.js';

export interface ServeOptions {
  port: number;
  host: string;
  /** A path to open in the viewer, e.g. `#/runs/3`. */
  path?: string;
}

/** Serves the API and the viewer over `store` until SIGINT or SIGTERM, then closes both. */
export async function serveUntilStopped(store: StoreBackend, options: ServeOptions): Promise<void> {
  const server = await startServer({ store, port: options.port, host: options.host });
  process.stdout.write(
    `simrec viewer: ${server.url}${options.path ?? ''}  (store ${store.location}; Ctrl-C stops)\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
}

export const serveOptions = (command: Command): Command =>
  command
    .option(
      '--port <n>',
      'port to listen on (0 picks a free one)',
      (v) => (v === '0' ? 0 : parsePositive('--port', v)),
      DEFAULT_PORT,
    )
    .option('--host <host>', 'address to listen on; 0.0.0.0 serves the whole network', '127.0.0.1');

export function registerServeCommand(program: Command): void {
  serveOptions(
    program.command('serve').description('serve the HTTP/WebSocket API and the viewer over the store'),
  ).action(async (opts: ServeOptions, command: Command) => {
    const { store: option } = command.optsWithGlobals<{ store?: string }>();
    const store = await openStore(resolveStoreLocation(option));
    try {
      await serveUntilStopped(store, opts);
    } finally {
      await store.close();
    }
  });
}
