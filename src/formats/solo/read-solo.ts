import type { RunTarget } from '../../model/run-ports.js';
import {
  importDataset,
  type ImportOptions,
  type ImportResult,
} from '../common/labelled-images/import-dataset.js';
import { readSoloDataset } from './read-solo-dataset.js';

export const importSolo = (
  into: RunTarget,
  dir: string,
  options: ImportOptions = {},
): Promise<ImportResult> =>
  importDataset(into, dir, readSoloDataset, { ...options, simulator: { name: 'unity-perception' } });
