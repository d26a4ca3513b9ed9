#!/usr/bin/env node
/**
 * The simrec command (package.json's bin): the Node.js version is checked before the program is loaded
 * (see node-version.ts), so that an old one gets a sentence saying what to install rather than a
 * SyntaxError from a module. The bin keeps its path: npx keeps a link to it in its cache, which a
 * moved bin would leave pointing at a file no longer executable.
 */
import { unsupportedNode } from './node-version.js';

const unsupported = unsupportedNode(process.versions.node);
if (unsupported) {
  process.stderr.write(`simrec: ${unsupported}\n`);
  process.exit(1);
}
await import('./program.js');
