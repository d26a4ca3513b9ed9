import { ApiError, getJson, send } from './api.js';
import { date, el } from './format.js';

/** What /api/mongodb answers and the live channel's `mongodb` messages carry. */
export interface MongoView {
  settings: { url: string; database: string; autoConnect: boolean };
  status: {
    state: 'disconnected' | 'connecting' | 'connected' | 'error';
    location: string | null;
    database: string | null;
    message: string | null;
    since: number;
    exports: { run: number; at: number; dataset?: number; collection?: string; error?: string }[];
  };
  /** Whether anyone asked for MongoDB (settings given or changed). */
  configured: boolean;
}

interface DatasetSummary {
  id: number;
  collection: string;
  generation: string;
  begin: number;
  end: number | null;
  endReason: string | null;
  actors: number;
}

const LABEL = {
  disconnected: 'disconnected',
  connecting: 'connecting…',
  connected: 'connected',
  error: 'error',
} as const;

/**
 * SODA.Sim's connection switches in the header: a status badge that opens a panel with the URL, the
 * database, auto-connect, connect/disconnect, the latest exports and the database's datasets.
 */
export class SodaPanel {
  readonly root = el('span', { class: 'mongodb' });
  private readonly badge = el(
    'button',
    {
      class: 'status',
      'data-testid': 'mongodb-status',
      title: "SODA.Sim's MongoDB: set up a connection",
    },
    'MongoDB…',
  );
  private readonly panel = el('div', { class: 'mongodb-panel', 'data-testid': 'mongodb-panel', hidden: '' });
  private readonly url = el('input', { 'data-testid': 'mongodb-url', size: '36', spellcheck: 'false' });
  private readonly database = el('input', { 'data-testid': 'mongodb-database', size: '16' });
  private readonly autoConnect = el('input', { type: 'checkbox', 'data-testid': 'mongodb-auto-connect' });
  private readonly message = el('div', { class: 'mongodb-message', 'data-testid': 'mongodb-message' });
  private readonly connectButton = el('button', { 'data-testid': 'mongodb-connect' }, 'Connect');
  private readonly disconnectButton = el('button', { 'data-testid': 'mongodb-disconnect' }, 'Disconnect');
  private readonly exports = el('ul', { class: 'mongodb-exports', 'data-testid': 'mongodb-exports' });
  private readonly datasets = el('div', { 'data-testid': 'mongodb-datasets' });
  /** The form is not overwritten by live updates while the user is editing it. */
  private editing = false;

  constructor() {
    const save = el('button', { 'data-testid': 'mongodb-save' }, 'Save');
    const list = el('button', { 'data-testid': 'mongodb-list' }, 'List datasets');
    this.panel.append(
      el('label', {}, 'URL ', this.url),
      el('label', {}, 'Database ', this.database),
      el('label', {}, this.autoConnect, ' connect when the server starts'),
      el('div', { class: 'mongodb-actions' }, save, this.connectButton, this.disconnectButton, list),
      this.message,
      el(
        'p',
        { class: 'hint' },
        'While connected, every run that finishes is written to this database as a SODA.Sim dataset, if “record every run” is on.',
      ),
      this.exports,
      this.datasets,
    );
    this.root.append(this.badge, this.panel);
    this.badge.addEventListener('click', () => (this.panel.hidden = !this.panel.hidden));
    for (const input of [this.url, this.database, this.autoConnect])
      input.addEventListener('input', () => (this.editing = true));
    // act shows the outcome in the panel, a failure included: the clicks wait for nothing.
    save.addEventListener('click', () => void this.act(() => this.save()));
    this.connectButton.addEventListener(
      'click',
      () =>
        void this.act(async () => {
          if (this.editing) await this.save();
          return send<MongoView>('POST', '/mongodb/connect');
        }),
    );
    this.disconnectButton.addEventListener(
      'click',
      () => void this.act(() => send<MongoView>('POST', '/mongodb/disconnect')),
    );
    list.addEventListener('click', () => void this.listDatasets()); // shows the list or its error
  }

  async refresh(): Promise<void> {
    this.show(await getJson<MongoView>('/mongodb'));
  }

  /** Shows a view from the API or the live channel. */
  show(view: MongoView): void {
    const { status, settings } = view;
    // A status is shown once someone asked for MongoDB; before, a plain way into the panel, with no
    // alarming 'disconnected' for a connection nobody wanted.
    this.badge.dataset.configured = String(view.configured);
    if (view.configured || status.state !== 'disconnected') {
      this.badge.dataset.state = status.state;
      this.badge.textContent = `MongoDB: ${LABEL[status.state]}`;
      this.badge.title = status.location
        ? `${status.location} database ${status.database}`
        : "SODA.Sim's MongoDB";
    } else {
      delete this.badge.dataset.state;
      this.badge.textContent = 'MongoDB…';
      this.badge.title = "SODA.Sim's MongoDB: set up a connection";
    }
    if (!this.editing) {
      this.url.value = settings.url;
      this.database.value = settings.database;
      this.autoConnect.checked = settings.autoConnect;
    }
    this.message.dataset.state = status.state;
    this.message.textContent =
      status.state === 'error'
        ? (status.message ?? 'error')
        : status.state === 'connected'
          ? `connected to ${status.location} database ${status.database}`
          : LABEL[status.state];
    this.connectButton.disabled = status.state === 'connecting';
    this.disconnectButton.disabled = status.state === 'disconnected';
    this.exports.replaceChildren(
      ...status.exports.map((e) =>
        el(
          'li',
          { 'data-run': String(e.run) },
          e.error ? `run ${e.run}: not exported: ${e.error}` : `run ${e.run} → ${e.collection}`,
        ),
      ),
    );
  }

  private async save(): Promise<MongoView> {
    const view = await send<MongoView>('PUT', '/mongodb', {
      url: this.url.value.trim(),
      database: this.database.value.trim(),
      autoConnect: this.autoConnect.checked,
    });
    this.editing = false;
    return view;
  }

  private async act(work: () => Promise<MongoView>): Promise<void> {
    try {
      this.show(await work());
    } catch (error) {
      this.message.dataset.state = 'error';
      this.message.textContent = error instanceof ApiError ? error.message : String(error);
    }
  }

  private async listDatasets(): Promise<void> {
    try {
      const list = await getJson<DatasetSummary[]>('/mongodb/datasets');
      const rows = list.map((d) => {
        const button = el('button', { 'data-testid': 'mongodb-import' }, 'Import');
        button.addEventListener('click', () => {
          button.disabled = true;
          // The answer, or its error, takes the button's place: nothing else waits.
          void send<{ run: { id: number } }>('POST', `/mongodb/datasets/${d.id}/import`).then(
            (r) => button.replaceWith(el('a', { href: `#/runs/${r.run.id}` }, `run ${r.run.id}`)),
            (e: unknown) => button.replaceWith(String(e instanceof Error ? e.message : e)),
          );
        });
        return el(
          'tr',
          { 'data-dataset': String(d.id) },
          el('td', {}, d.collection),
          el('td', {}, date(d.begin)),
          el('td', {}, d.endReason ?? '(unfinished)'),
          el('td', {}, String(d.actors)),
          el('td', {}, button),
        );
      });
      this.datasets.replaceChildren(
        list.length ? el('table', {}, el('tbody', {}, ...rows)) : 'No dataset in this database.',
      );
    } catch (error) {
      this.datasets.replaceChildren(error instanceof Error ? error.message : String(error));
    }
  }
}
