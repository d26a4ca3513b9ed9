import type { StoreBackend } from '../../model/store-port.js';
import { importDataset, type ImportOptions, type ImportResult } from '../perception/index.js';
import { readSoloDataset } from './solo-dataset.js';

export const importSolo = (
  store: StoreBackend,
  dir: string,
  options: ImportOptions = {},
): Promise<ImportResult> =>
  importDataset(store, dir, readSoloDataset, { ...options, simulator: { name: 'unity-perception' } });
