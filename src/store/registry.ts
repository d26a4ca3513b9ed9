import type { StoreBackend } from '../model/store-port.js';

/**
 * Store backends by location. Adding a backend is adding a folder and an entry here; each loads only
 * when a location asks for it, so using SQLite never loads the MongoDB driver.
 */
export interface BackendEntry {
  kind: string;
  /** Whether this backend serves the location (a file path, a URL...). */
  accepts(location: string): boolean;
  open(location: string): Promise<StoreBackend>;
}

export const BACKENDS: BackendEntry[] = [
  {
    kind: 'sqlite',
    accepts: (location) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(location) || location.startsWith('file://'),
    async open(location) {
      const { SqliteBackend } = await import('./sqlite/sqlite-backend.js');
      const path = location.startsWith('file://') ? new URL(location).pathname : location;
      return SqliteBackend.open(path);
    },
  },
  {
    kind: 'mongodb',
    accepts: (location) => /^mongodb(\+srv)?:\/\//.test(location),
    async open(location) {
      const { MongoBackend } = await import('./mongodb/mongodb-backend.js');
      return MongoBackend.open(location);
    },
  },
];
