import { describeValue, invalid } from '../model/errors.js';
import { databaseNameProblem, isMongoUrl, redactUrl } from '../mongodb/mongodb-url.js';

/** SODA.Sim's defaults (`USodaUserSettings`): a local server, database `sodasim`, no auto-connect. */
export const SODA_CONNECTION_DEFAULTS = {
  url: 'mongodb://localhost:27017',
  database: 'sodasim',
  autoConnect: false,
} as const;

/** SODA.Sim's connection switches: `MongoURL`, `DatabaseName`, `bAutoConnect`. */
export interface SodaConnectionValues {
  url: string;
  /** The database used, whatever the URL's path says (SODA.Sim keeps the two apart too). */
  database: string;
  /** Connect when `simrec serve` starts. */
  autoConnect: boolean;
}

const KEYS = ['url', 'database', 'autoConnect'] as const;

/**
 * The MongoDB connection settings of the server. The URL may carry a password: clients are shown it
 * redacted (`view()`), and a client sending the redacted URL back keeps the stored one.
 */
export class SodaConnectionSettings {
  private values: SodaConnectionValues;
  private readonly listeners = new Set<(values: SodaConnectionValues) => void>();
  /**
   * Whether anyone asked for MongoDB: settings were given (the settings file's `mongodb` section) or
   * changed since. Until then the defaults are SODA.Sim's, and the viewer does not show a connection
   * nobody configured.
   */
  configured: boolean;

  constructor(initial?: Partial<SodaConnectionValues>, where = 'settings.mongodb') {
    this.values = { ...SODA_CONNECTION_DEFAULTS };
    this.values = this.check(initial ?? {}, where);
    this.configured = initial !== undefined;
  }

  /** The values, password included: for connecting, never for showing. */
  get(): SodaConnectionValues {
    return { ...this.values };
  }

  /** The values as a client may see them. */
  view(): SodaConnectionValues {
    return { ...this.values, url: redactUrl(this.values.url) };
  }

  /** Applies a partial update, refusing unknown keys, wrong types, a non-MongoDB URL, a bad database name. */
  update(patch: unknown, where = 'settings.mongodb'): SodaConnectionValues {
    this.values = this.check(patch, where);
    this.configured = true;
    for (const listener of this.listeners) listener(this.get());
    return this.view();
  }

  onChange(listener: (values: SodaConnectionValues) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private check(patch: unknown, where: string): SodaConnectionValues {
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch))
      throw invalid(
        `${where}: expected an object such as {"url": "mongodb://localhost:27017", "database": "sodasim", "autoConnect": true}, got ${describeValue(patch)}`,
      );
    const next = { ...this.values };
    for (const [key, value] of Object.entries(patch)) {
      if (key === 'autoConnect') {
        if (typeof value !== 'boolean')
          throw invalid(`${where}.autoConnect: expected a boolean, got ${describeValue(value)}`);
        next.autoConnect = value;
      } else if (key === 'url') {
        if (typeof value !== 'string' || !isMongoUrl(value) || !/^[^:]+:\/\/[^/?]+/.test(value))
          throw invalid(
            `${where}.url: expected mongodb://[USER:PASSWORD@]HOST[:PORT][/?OPTIONS], got ${describeValue(typeof value === 'string' ? redactUrl(value) : value)}`,
          );
        // The viewer shows the URL redacted; sent back unchanged, it means "keep the one you have".
        if (value !== redactUrl(this.values.url)) next.url = value;
      } else if (key === 'database') {
        const problem = typeof value === 'string' ? databaseNameProblem(value) : 'it is not a string';
        if (problem)
          throw invalid(
            `${where}.database: expected a MongoDB database name (1-63 bytes, none of /\\. "$*<>:|?), got ${describeValue(value)}: ${problem}`,
          );
        next.database = value as string;
      } else throw invalid(`${where}.${key}: unknown setting (known: ${KEYS.join(', ')})`);
    }
    return next;
  }
}
