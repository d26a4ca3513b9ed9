export * from './errors.js';
export * from './json.js';
export * from './run.js';
export * from './stream.js';
export * from './catalog.js';
export * from './attachment.js';
export * from './units.js';
export * from './standard-streams.js';
export type * from './store-port.js';
