/** simrec's public surface: the model, opening a store, recording, and queries. */
export * from './model/index.js';
export { openStore, resolveStoreLocation, DEFAULT_STORE, type OpenStoreOptions } from './store/open-store.js';
export { RunRecorder, type RecorderOptions } from './record/run-recorder.js';
export * from './replay/run-queries.js';
export { recordSyntheticRun, type SyntheticRunOptions } from './demo/synthetic-run.js';
export {
  recordDemoRun,
  simulateDemoTraffic,
  type DemoRunOptions,
  type DemoRunResult,
} from './demo/demo-run.js';
export {
  importRecording,
  withImportTarget,
  type ImportOptions,
  type ImportResult,
} from './record/import-run.js';
export { exportRecording, type ExportOptions } from './replay/export-run.js';
export { storeRunSource } from './replay/run-source.js';
export { FORMATS, formatNames, loadCodec } from './formats/registry.js';
