import './style.css';
import { api, connectLive, type RunListEntry } from './api.js';
import { el } from './format.js';
import { FindPanel } from './find-panel.js';
import { RunList } from './run-list.js';
import { RunView } from './run-view.js';
import { SodaPanel, type MongoView } from './soda-panel.js';

const app = document.getElementById('app')!;
const status = document.getElementById('store-status')!;
let list: RunList | null = null;
let view: RunView | null = null;
let latestRuns: RunListEntry[] = [];
let storeLabel = '';

declare global {
  interface Window {
    /** For tests and the benchmark: the run view on screen. */
    simrecView?: RunView | null;
  }
}

async function route(): Promise<void> {
  const hash = location.hash || '#/';
  const runMatch = /^#\/runs\/(\d+)(?:\?(.*))?$/.exec(hash);
  const findMatch = /^#\/find(?:\?(.*))?$/.exec(hash);
  // A comparison is run A's view with run B over it.
  const diffMatch = /^#\/diff\/(\d+)\/(\d+)(?:\?(.*))?$/.exec(hash);
  app.replaceChildren();
  list = null;
  view = null;
  window.simrecView = null;
  if (hash === '#/' || hash === '#') {
    list = new RunList();
    app.append(list.root);
    list.update(latestRuns.length ? latestRuns : await api.runs());
  } else if (findMatch) {
    // The panel keeps its question in the address with replaceState, which fires no hashchange.
    const q = new URLSearchParams(findMatch[1] ?? '').get('q');
    app.append(new FindPanel(q ?? undefined).root);
    app.dataset.ready = 'true';
  } else if (runMatch || diffMatch) {
    const query = new URLSearchParams((runMatch ? runMatch[2] : diffMatch![3]) ?? '');
    const t = query.get('t');
    const at = query.get('at');
    const actor = query.get('actor');
    view = new RunView(Number(runMatch ? runMatch[1] : diffMatch![1]), {
      ...(diffMatch ? { compare: Number(diffMatch[2]) } : {}),
      ...(t !== null ? { t: Number(t) } : {}),
      ...(at !== null ? { at: Number(at) } : {}),
      ...(actor !== null ? { actor } : {}),
    });
    window.simrecView = view;
    app.append(view.root);
    await view.load();
    app.dataset.ready = 'true';
  } else {
    app.append(
      el(
        'div',
        { class: 'not-found', 'data-testid': 'not-found' },
        el('h1', {}, 'Page not found'),
        el('a', { href: '#/' }, '← back to the runs'),
      ),
    );
  }
}

// The page is drawn as its answers arrive: nothing waits for route, the requests below or the live
// updates. A request that fails leaves its part as it was; the status line tells of a store that is down.
window.addEventListener('hashchange', () => void route());
window.addEventListener('keydown', (e) => view?.key(e));
void api.health().then((h) => {
  storeLabel = `${h.store.kind}: ${h.store.location}`;
  if (status.dataset.state === 'connected') status.textContent = `● ${storeLabel}`;
});
const recordSwitch = document.getElementById('record-every-run') as HTMLInputElement;
const mongoPanel = new SodaPanel();
status.before(mongoPanel.root);
async function syncSettings(): Promise<void> {
  recordSwitch.checked = (await api.settings()).recordEveryRun;
}
recordSwitch.addEventListener('change', () => {
  void api
    .putSettings({ recordEveryRun: recordSwitch.checked })
    .then((s) => (recordSwitch.checked = s.recordEveryRun));
});

connectLive(
  (runs) => {
    latestRuns = runs;
    list?.update(runs);
    if (view) for (const r of runs) void view.liveUpdate(r);
  },
  (settings) => (recordSwitch.checked = settings.recordEveryRun),
  (state, detail) => {
    // The switch and the runs are fetched afresh on each (re)connection: they may have changed meanwhile.
    if (state === 'connected' && status.dataset.state !== 'connected') {
      void syncSettings();
      void mongoPanel.refresh();
    }
    status.dataset.state = state;
    status.textContent =
      state === 'connected'
        ? `● ${storeLabel || 'connected'}`
        : state === 'error'
          ? `store error: ${detail ?? ''}`
          : state === 'connecting'
            ? 'connecting…'
            : 'disconnected: reconnecting…';
  },
  (message) => {
    if (message.type === 'mongodb') mongoPanel.show(message as unknown as MongoView);
  },
);
void route();
