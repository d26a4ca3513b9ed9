#!/usr/bin/env node
/**
 * The simrec command: the Node.js version is checked before the rest is loaded (see node-version.ts),
 * so that an old one gets a sentence saying what to install rather than a SyntaxError from a module.
 */
import { unsupportedNode } from './node-version.js';

const unsupported = unsupportedNode(process.versions.node);
if (unsupported) {
  process.stderr.write(`simrec: ${unsupported}\n`);
  process.exit(1);
}
await import('./main.js');
