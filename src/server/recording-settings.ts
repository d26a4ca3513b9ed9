import { describeValue, invalid } from '../model/errors.js';

export interface RecordingSettingsValues {
  /**
   * SODA.Sim's "record every run": while off, simulators connected to this server are told not to
   * record (their runs are not stored); a run already being recorded goes on.
   */
  recordEveryRun: boolean;
}

/** The server's recording switches, shared by the API, the viewer and the ingest endpoints. */
export class RecordingSettings {
  private values: RecordingSettingsValues;
  private readonly listeners = new Set<(values: RecordingSettingsValues) => void>();

  constructor(initial: Partial<RecordingSettingsValues> = {}) {
    this.values = { recordEveryRun: initial.recordEveryRun ?? true };
  }

  get(): RecordingSettingsValues {
    return { ...this.values };
  }

  /** Applies a partial update from a client, refusing unknown keys and wrong types. */
  update(patch: unknown): RecordingSettingsValues {
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch))
      throw invalid(
        `settings: expected an object such as {"recordEveryRun": false}, got ${describeValue(patch)}`,
      );
    const next = { ...this.values };
    for (const [key, value] of Object.entries(patch)) {
      if (key !== 'recordEveryRun') throw invalid(`settings.${key}: unknown setting (known: recordEveryRun)`);
      if (typeof value !== 'boolean')
        throw invalid(`settings.recordEveryRun: expected a boolean, got ${describeValue(value)}`);
      next.recordEveryRun = value;
    }
    this.values = next;
    for (const listener of this.listeners) listener(this.get());
    return this.get();
  }

  onChange(listener: (values: RecordingSettingsValues) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
