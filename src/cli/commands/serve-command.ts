import type { Command } from 'commander';
import { tablesFolderOf } from '../with-store.js';
import type { StoreBackend } from '../../model/store-port.js';
import { DEFAULT_PORT } from '../../server/default-port.js';
import type { ServerOptions } from '../../server/start-server.js';
import { openStore, resolveStoreLocation } from '../../store/open-store.js';
import { parsePositive } from '../args.js';
import { exitInterrupted, takeInterrupts } from '../interrupt.js';

export interface ServeOptions {
  port: number;
  host: string;
  /** A path to open in the viewer, e.g. `#/runs/3`. */
  path?: string;
  /** The tables folder SQL reads (the global --tables, resolved). */
  tablesFolder?: string;
  /** Listen for simulators over plain TCP too (they always can at ws://.../ingest). */
  ingestPort?: number;
  /** Simulators and viewers must present this token (default: $SIMREC_TOKEN, or $SIMREC_INGEST_TOKEN). */
  token?: string;
  /** The settings file (default: $SIMREC_SETTINGS, or ~/.config/simrec/settings.json). */
  settings?: string;
  /** Names besides the loopback ones and --host that requests may use (request-guard.ts). */
  allowHost?: string[];
  /** Origins besides the server's own whose pages may use it. */
  allowOrigin?: string[];
}

const list = (value: string, previous: string[] = []): string[] => [
  ...previous,
  ...value.split(',').filter((v) => v !== ''),
];

/** A server started on the store: bound, not yet announced. */
export interface Serving {
  /** Prints the viewer's address (with `path` to open, e.g. `#/runs/3`) and the ingest endpoints. */
  announce(path?: string): void;
  /**
   * Serves until Ctrl-C or SIGTERM, then closes the server; resolves to what was kept, for the line
   * the command prints before it exits 130 (once the store is closed).
   */
  untilStopped(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts the API, the viewer and the ingest endpoints over `store`: the port is bound (and a port
 * someone else holds refused) before the caller does anything long, such as recording the demo.
 */
export async function startServing(store: StoreBackend, options: ServeOptions): Promise<Serving> {
  const [{ startServer }, { defaultSettingsPath }, { reportMongoConnection }, young] = await Promise.all([
    import('../../server/start-server.js'),
    import('../../server/settings-file.js'),
    import('../../record/soda-connection.js'),
    import('../../server/young-generation.js'),
  ]);
  const token = options.token ?? process.env.SIMREC_TOKEN ?? process.env.SIMREC_INGEST_TOKEN;
  const ingest: NonNullable<ServerOptions['ingest']> = {};
  if (options.ingestPort !== undefined) ingest.tcpPort = options.ingestPort;
  if (token) ingest.token = token;
  const server = await startServer({
    store,
    port: options.port,
    host: options.host,
    allowHosts: options.allowHost ?? [],
    allowOrigins: options.allowOrigin ?? [],
    ingest,
    ...(token ? { apiToken: token } : {}),
    settingsFile: options.settings ?? defaultSettingsPath(),
    ...(options.tablesFolder ? { tablesFolder: options.tablesFolder } : {}),
  });
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => (closed ??= server.close());
  return {
    announce(path = '') {
      // From here on the process is the server's own: its memory stays bounded under clients that
      // send all at once.
      young.limitYoungGeneration(young.SERVER_YOUNG_GENERATION_MIB);
      reportMongoConnection(server.mongodb.connection);
      // With a token, the address printed carries it: that is the link to open the viewer with.
      const query = token ? `?token=${encodeURIComponent(token)}` : '';
      process.stdout.write(
        `simrec viewer: ${server.url}${query}${path}  (store ${store.location}; Ctrl-C stops)\n`,
      );
      if (!token && !['127.0.0.1', 'localhost', '::1'].includes(options.host))
        process.stderr.write(
          `simrec: serving ${options.host} without a token: anyone on the network can read and record; set --token\n`,
        );
      const ws = server.url.replace(/^http/, 'ws').replace(/\/$/, '/ingest');
      const tcp = server.ingestTcpPort === null ? '' : ` and tcp://${options.host}:${server.ingestTcpPort}`;
      process.stdout.write(`simrec ingest: ${ws}${tcp}${token ? ' (token required)' : ''}\n`);
    },
    async untilStopped() {
      let release = (): void => {};
      await new Promise<void>((resolve) => (release = takeInterrupts(resolve)));
      release();
      // Runs simulators were still sending end `interrupted` as the server closes, with every batch
      // it had acknowledged.
      const open = server.ingest.stats().runs;
      await close();
      return `the server stopped; ${store.location} keeps every run${
        open.length
          ? ` (${open.length === 1 ? 'run' : 'runs'} ${open.join(', ')}, still being recorded, ended interrupted with every batch acknowledged)`
          : ''
      }`;
    },
    close,
  };
}

export const serveOptions = (command: Command): Command =>
  command
    .option(
      '--port <n>',
      'port to listen on (0 picks a free one)',
      (v) => (v === '0' ? 0 : parsePositive('--port', v)),
      DEFAULT_PORT,
    )
    .option('--host <host>', 'address to listen on; 0.0.0.0 serves the whole network', '127.0.0.1')
    .option('--ingest-port <n>', 'also take simulators over plain TCP on this port (0 picks one)', (v) =>
      v === '0' ? 0 : parsePositive('--ingest-port', v),
    )
    .option('--token <token>', 'simulators and viewers must present this token (default: $SIMREC_TOKEN)')
    .option(
      '--allow-host <names>',
      "more names the server answers to besides localhost and --host, comma-separated (e.g. the machine's DNS name); other Host headers are refused",
      list,
    )
    .option(
      '--allow-origin <origins>',
      'more origins whose web pages may use the API, comma-separated (e.g. https://dash.example.com)',
      list,
    )
    .option(
      '--settings <file>',
      'where the switches (record every run, the SODA.Sim MongoDB connection) are kept (default: $SIMREC_SETTINGS or ~/.config/simrec/settings.json)',
    );

export function registerServeCommand(program: Command): void {
  serveOptions(
    program.command('serve').description('serve the HTTP/WebSocket API and the viewer over the store'),
  ).action(async (opts: ServeOptions, command: Command) => {
    const { store: option } = command.optsWithGlobals<{ store?: string }>();
    const store = await openStore(resolveStoreLocation(option));
    let kept: string;
    try {
      const serving = await startServing(store, {
        ...opts,
        tablesFolder: tablesFolderOf(command, store).path,
      });
      try {
        serving.announce();
        kept = await serving.untilStopped();
      } finally {
        await serving.close();
      }
    } finally {
      await store.close();
    }
    // Stopped by Ctrl-C, as the command line's rules say (docs/command-line.md): 130, and what was kept.
    exitInterrupted(kept);
  });
}
