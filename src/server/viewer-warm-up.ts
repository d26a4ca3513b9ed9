import type { StoreBackend } from '../model/store-port.js';

/**
 * What a server asks itself before it listens, on a store on this machine: a page's first requests on
 * the newest run (its detail, the window of its middle, its road network), answered by the server's own
 * routes as a page's are, so that the first page opened runs code V8 has compiled: a fresh server's first
 * answers took much longer than later ones (performance-history.md). The server starts that much later
 * instead, before anyone waits for it. A MongoDB store is not read: its reads cross the network, and the start
 * would wait on them. Best effort: what goes wrong is what the page's own request will report. Answers
 * the paths that were answered (200).
 */
export async function warmViewerRoutes(
  store: StoreBackend,
  get: (path: string) => Response | Promise<Response>,
): Promise<string[]> {
  const answered: string[] = [];
  if (store.kind !== 'sqlite') return answered;
  try {
    const [newest] = await store.listRuns({ newestFirst: true, limit: 1 });
    if (!newest) return answered;
    // Answers are read as bytes: they come gzipped, as a browser asks for them.
    const middle = newest.end === null ? 0 : Math.max(0, (newest.end - newest.begin) / 2e6);
    await Promise.all(
      [
        // As the viewer asks for the detail (web/src/api.ts, `run`).
        `/api/runs/${newest.id}?fields=shared&captures=apart`,
        `/api/runs/${newest.id}/states?moment=${middle}&format=columns`,
        `/api/runs/${newest.id}/roadnet`,
      ].map(async (path) => {
        const answer = await get(path);
        await answer.arrayBuffer();
        if (answer.status === 200) answered.push(path);
      }),
    );
  } catch {
    // Nothing warmed: the first page runs cold.
  }
  return answered;
}
