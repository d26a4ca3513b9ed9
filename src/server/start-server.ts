import { existsSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono } from 'hono';
import { COMPRESSIBLE_CONTENT_TYPE_REGEX } from 'hono/compress';
import { compressAnswers } from './answer-compression.js';
import { IngestServer, type IngestServerOptions } from '../ingest/ingest-server.js';
import { listenTcp, type TcpListener } from '../ingest/tcp-listener.js';
import { INGEST_PATH, IngestWebSocketEndpoint } from '../ingest/websocket-endpoint.js';
import type { StoreBackend } from '../model/store-port.js';
import { answerError, createApi } from './http-api.js';
import { createDiffApi } from './diff-api.js';
import { warmViewerRoutes } from './viewer-warm-up.js';
import { createSqlApi, SQL_LIMITS, type SqlApiLimits } from './sql-api.js';
import { TablesKeeper } from '../tables/tables-keeper.js';
import { TablesFolder, tablesFolderFor } from '../tables/tables-folder.js';
import { keepTablesOnThreads } from '../tables/tables-writer-threads.js';
import { LIVE_PATH, LiveUpdates } from './live-updates.js';
import { RecordingSettings } from './recording-settings.js';
import { requireToken, upgradeHasToken } from './api-token.js';
import { RequestGuard, SECURITY_HEADERS, type Refusal } from './request-guard.js';
import { loadSettingsFile } from './settings-file.js';
import { DEFAULT_PORT } from './default-port.js';
import { STATE_WINDOW_MEDIA_TYPE } from './state-window-wire.js';
import { SodaConnection, type SodaConnectionOptions } from '../record/soda-connection.js';
import { connectionView, createSodaConnectionApi } from './soda-connection-api.js';
import { SodaConnectionSettings } from '../record/soda-connection-settings.js';

/** The built viewer (Vite writes it to dist/web; this file runs from dist/src/server). */
export const VIEWER_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');

/**
 * The viewer's built files are named by their content (vite puts a hash of each in its name under
 * assets/): a browser keeps them for good and, from its second page on, neither fetches them again nor
 * compiles the script again (a browser reuses its compiled code only for a script it took from its
 * cache). The page that names them is asked again each time, so that a new build is seen at once.
 */
const VIEWER_ASSETS = '/assets/';
const ASSET_CACHE_CONTROL = 'public, max-age=31536000, immutable';
const PAGE_CACHE_CONTROL = 'no-cache';

/** What a browser may keep of the viewer's file asked for at `urlPath` (the request's path). */
function cacheControlOf(urlPath: string): string {
  return urlPath.startsWith(VIEWER_ASSETS) ? ASSET_CACHE_CONTROL : PAGE_CACHE_CONTROL;
}

export interface ServerOptions {
  store: StoreBackend;
  /** 0 picks a free port. */
  port?: number;
  /** Loopback by default: a recorder's data is not for the whole network unless asked. */
  host?: string;
  /** More names requests may use in `Host` besides the loopback names and `host` (request-guard.ts). */
  allowHosts?: readonly string[];
  /** More origins whose pages may use the API and the WebSockets (request-guard.ts). */
  allowOrigins?: readonly string[];
  liveIntervalMs?: number;
  /** The recording switches; the viewer changes them, the ingest endpoints obey them. */
  settings?: RecordingSettings;
  /** Simulators connect at /ingest (WebSocket) and, with `tcpPort`, over plain TCP on the same host. */
  ingest?: Omit<IngestServerOptions, 'store' | 'isRecording'> & { tcpPort?: number };
  /** When set, the API and the viewer's live channel require it (see api-token.ts). */
  apiToken?: string;
  /** Where the switches are kept across restarts (see settings-file.ts); without it they live in memory. */
  settingsFile?: string;
  /** The tables folder SQL reads (tables/tables-folder.ts); beside the store by default. */
  tablesFolder?: string;
  /** The SQL endpoint's row and time limits (sql-api.ts SQL_LIMITS by default). */
  sqlLimits?: Partial<SqlApiLimits>;
  /** The SODA.Sim MongoDB connection (see soda-connection.ts). */
  mongodb?: Pick<SodaConnectionOptions, 'pollMs' | 'serverSelectionTimeoutMS'>;
}

export interface RunningServer {
  url: string;
  settings: RecordingSettings;
  /** SODA.Sim's connection: its settings and the connection itself. */
  mongodb: { settings: SodaConnectionSettings; connection: SodaConnection };
  ingest: IngestServer;
  /** The TCP ingest port, when one was asked for. */
  ingestTcpPort: number | null;
  /** The viewer's routes the server asked itself before listening, that answered (viewer-warm-up.ts). */
  warmedUp: readonly string[];
  close(): Promise<void>;
}

export { DEFAULT_PORT };

/** A refused request or upgrade, as JSON, with the headers every answer carries. */
function refusalText(refusal: Refusal): string {
  const body = JSON.stringify({ error: refusal.error, code: refusal.code });
  const reason = { 400: 'Bad Request', 403: 'Forbidden', 415: 'Unsupported Media Type' }[refusal.status];
  const headers = Object.entries(SECURITY_HEADERS).map(([k, v]) => `${k}: ${v}\r\n`);
  return `HTTP/1.1 ${refusal.status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers.join('')}Connection: close\r\n\r\n${body}`;
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const app = new Hono();
  const host = options.host ?? '127.0.0.1';
  const guard = new RequestGuard({
    host,
    allowHosts: options.allowHosts ?? [],
    allowOrigins: options.allowOrigins ?? [],
  });
  app.onError(answerError);
  // First of all: a request from the wrong name or another site's page gets nothing else (request-guard.ts).
  app.use('*', async (c, next) => {
    const refusal = guard.check({
      method: c.req.method,
      host: c.req.header('host'),
      origin: c.req.header('origin'),
      contentType: c.req.header('content-type'),
      hasBody:
        Number(c.req.header('content-length') ?? 0) > 0 || c.req.header('transfer-encoding') !== undefined,
    });
    let answer: Response;
    if (refusal) answer = c.json({ error: refusal.error, code: refusal.code }, refusal.status);
    else {
      await next();
      answer = c.res;
    }
    // A route may have set its own (an attachment's sandbox); the rest get the server's.
    for (const [name, value] of Object.entries(SECURITY_HEADERS))
      if (!answer.headers.has(name)) answer.headers.set(name, value);
    return answer;
  });
  // Answers compressed for a client that accepts it (browsers, curl --compressed): a big run's detail
  // and its windows of states are mostly repeated names and nearby numbers, tens of times smaller
  // gzipped, which is what lets a viewer across a network keep up with playback. Images are not.
  app.use(
    '*',
    compressAnswers(
      (type) => COMPRESSIBLE_CONTENT_TYPE_REGEX.test(type) || type.startsWith(STATE_WINDOW_MEDIA_TYPE),
    ),
  );
  const saved = options.settingsFile ? loadSettingsFile(options.settingsFile, options.settings) : undefined;
  const settings = saved?.recording ?? options.settings ?? new RecordingSettings();
  const mongoSettings = saved?.mongodb ?? new SodaConnectionSettings();
  const mongo = new SodaConnection({
    ...options.mongodb,
    store: options.store,
    settings: mongoSettings,
    recordEveryRun: () => settings.get().recordEveryRun,
  });
  if (options.apiToken) app.use('/api/*', requireToken(options.apiToken));
  app.route('/api/mongodb', createSodaConnectionApi(mongoSettings, mongo));
  const tables = new TablesKeeper(
    options.store,
    new TablesFolder(options.tablesFolder ?? tablesFolderFor(options.store.location)),
    // A run's tables not written now are written by the first question that needs them.
    (error) => console.error(`simrec: warning: the tables of a run that ended: ${(error as Error).message}`),
    // On threads of their own, which open the SQLite file again, one core left to this thread's pages;
    // a MongoDB store's on this one (not tried on a worker: there is no MongoDB server where this was
    // written).
    options.store.kind === 'sqlite'
      ? keepTablesOnThreads({ threads: Math.max(1, availableParallelism() - 1) })
      : undefined,
  );
  app.route('/api/sql', createSqlApi(tables, { ...SQL_LIMITS, ...options.sqlLimits }));
  app.route('/api/diff', createDiffApi(options.store));
  app.route('/api', createApi(options.store, settings));
  // Mounted apps do not answer for paths they lack; without this the viewer's fallback would.
  app.all('/api/*', (c) =>
    c.json({ error: `no such API route: ${c.req.method} ${c.req.path}`, code: 'not_found' }, 404),
  );
  if (existsSync(join(VIEWER_ROOT, 'index.html'))) {
    const index = readFileSync(join(VIEWER_ROOT, 'index.html'), 'utf8');
    app.use(
      '/*',
      serveStatic({
        root: VIEWER_ROOT,
        onFound: (_file, c) => c.header('cache-control', cacheControlOf(c.req.path)),
      }),
    );
    // The viewer routes in the browser (#/runs/1); any other page path gets the app too.
    app.get('*', (c) => c.html(index, 200, { 'cache-control': PAGE_CACHE_CONTROL }));
  } else {
    app.get('*', (c) => c.text('The viewer is not built: run `npm run build`.', 503));
  }

  // Its first view runs compiled decoders and reads: the server has time before anyone looks.
  options.store.warm?.();
  const warmedUp = await warmViewerRoutes(options.store, (path) =>
    app.fetch(
      new Request(`http://localhost${path}`, {
        headers: {
          host: 'localhost',
          'accept-encoding': 'gzip',
          ...(options.apiToken ? { authorization: `Bearer ${options.apiToken}` } : {}),
        },
      }),
    ),
  );
  const live = new LiveUpdates(options.store, options.liveIntervalMs);
  live.onRuns((runs) => tables.runsChanged(runs));
  settings.onChange((values) => live.broadcast({ type: 'settings', settings: values }));
  const announceMongo = (): void =>
    void live.broadcast({ type: 'mongodb', ...connectionView(mongoSettings, mongo) });
  mongoSettings.onChange(announceMongo);
  mongo.onChange(announceMongo);
  // SODA.Sim's bAutoConnect: the server starts at once; the viewer shows the attempt as it goes (connect
  // never rejects: a failure is its status).
  if (mongoSettings.get().autoConnect) void mongo.connect();
  const ingest = new IngestServer({
    ...options.ingest,
    store: options.store,
    isRecording: () => settings.get().recordEveryRun,
  });
  settings.onChange((values) => ingest.setRecording(values.recordEveryRun));
  const ingestWs = new IngestWebSocketEndpoint(ingest);
  const server = await new Promise<Server>((resolveServer, reject) => {
    const s = serve({ fetch: app.fetch, port: options.port ?? DEFAULT_PORT, hostname: host }, () =>
      resolveServer(s as Server),
    );
    (s as Server).once('error', reject);
  });
  server.on('upgrade', (request, socket, head) => {
    const refusal = guard.check({
      method: request.method ?? 'GET',
      host: request.headers.host,
      origin: request.headers.origin,
    });
    if (refusal) {
      socket.end(refusalText(refusal));
      return;
    }
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    if (path === LIVE_PATH) {
      if (options.apiToken && !upgradeHasToken(request, options.apiToken)) {
        socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
        return;
      }
      live.handleUpgrade(request, socket, head);
    } else if (path === INGEST_PATH) ingestWs.handleUpgrade(request, socket, head);
    else socket.destroy();
  });
  const tcp: TcpListener | null =
    options.ingest?.tcpPort === undefined
      ? null
      : await listenTcp(ingest, { port: options.ingest.tcpPort, host });
  const { port } = server.address() as AddressInfo;
  return {
    settings,
    mongodb: { settings: mongoSettings, connection: mongo },
    ingest,
    ingestTcpPort: tcp?.port ?? null,
    warmedUp,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/`,
    async close() {
      await mongo.close();
      live.close();
      await ingest.close();
      ingestWs.close();
      await tcp?.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await tables.close();
    },
  };
}
