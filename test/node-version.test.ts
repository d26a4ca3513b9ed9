/**
 * The simrec command refuses a Node.js too old for it with a sentence naming the version it needs
 * (src/cli/node-version.ts), instead of a SyntaxError from a module importing zlib.crc32.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { unsupportedNode } from '../src/cli/node-version.js';

describe('the Node.js versions simrec runs on', () => {
  it('20.15 and later, 22.2 and later on 22 (zlib.crc32); older ones named with what to install', () => {
    for (const version of ['20.15.0', '20.19.2', '22.2.0', '22.11.0', '23.0.0', '24.4.1'])
      assert.equal(unsupportedNode(version), undefined, version);
    for (const version of ['18.19.1', '20.0.0', '20.14.0', '21.7.3', '22.1.0']) {
      const why = unsupportedNode(version);
      assert.ok(why?.includes(`Node.js ${version} cannot run simrec`), `${version}: ${why}`);
      assert.ok(why?.includes('20.15 or later'), `${version}: ${why}`);
    }
  });

  it('this Node.js is one of them (so the command loads past its check)', () => {
    assert.equal(unsupportedNode(process.versions.node), undefined, process.versions.node);
  });
});
