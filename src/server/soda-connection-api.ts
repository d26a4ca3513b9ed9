import { Hono } from 'hono';
import { describeValue, invalid } from '../model/errors.js';
import { answerError, json, jsonBody, smallBody } from './http-api.js';
import type { SodaConnection } from '../record/soda-connection.js';
import type { SodaConnectionSettings } from '../record/soda-connection-settings.js';

/** What every answer of this API carries: the settings as a client may see them, and the status. */
export const connectionView = (settings: SodaConnectionSettings, connection: SodaConnection) => ({
  settings: settings.view(),
  status: connection.status(),
  /** Whether anyone asked for MongoDB (settings given or changed): the viewer shows its status only then. */
  configured: settings.configured,
});

/**
 * SODA.Sim's connection switches over HTTP, mounted at /api/mongodb (behind the API token):
 *
 * - `GET /` and `PUT /` (a partial `{url, database, autoConnect}`): the settings and the status;
 * - `POST /connect`, `POST /disconnect`: answer once the attempt is over, with the status (a failed
 *   connection is an answer with `status.state` "error" and its reason, not an HTTP error);
 * - `GET /datasets`, `POST /datasets/:id/import`: the connected database as a source of runs.
 */
export function createSodaConnectionApi(settings: SodaConnectionSettings, connection: SodaConnection): Hono {
  const api = new Hono();
  api.onError(answerError);
  api.get('/', (c) => json(c, connectionView(settings, connection)));
  api.put('/', smallBody('settings.mongodb'), async (c) => {
    settings.update(await jsonBody(c, 'settings.mongodb'));
    return json(c, connectionView(settings, connection));
  });
  api.post('/connect', async (c) => {
    await connection.connect();
    return json(c, connectionView(settings, connection));
  });
  api.post('/disconnect', async (c) => {
    await connection.disconnect();
    return json(c, connectionView(settings, connection));
  });
  api.get('/datasets', async (c) => json(c, await connection.datasets()));
  api.post('/datasets/:id/import', async (c) => {
    const raw = c.req.param('id');
    if (!/^\d{1,15}$/.test(raw))
      throw invalid(`dataset id: expected an integer >= 0, got ${describeValue(raw)}`);
    return json(c, { run: await connection.importDataset(Number(raw)) });
  });
  return api;
}
