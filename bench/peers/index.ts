import type { Peer } from '../peer.js';
import { jsonLinesPeer } from './json-lines.js';
import { limsimPeer } from './limsim-sqlite.js';
import { mcapPerFramePeer, mcapPerStatePeer } from './mcap.js';
import { rawFilePeer, rawSqlitePeer } from './raw-limit.js';
import { simrecAwaitedPeer, simrecF32Peer, simrecNormalPeer, simrecPeer } from './simrec.js';

/** simrec first: every ratio is simrec against one of the others. */
export const PEERS: Peer[] = [
  simrecPeer,
  simrecAwaitedPeer,
  simrecNormalPeer,
  simrecF32Peer,
  limsimPeer,
  mcapPerStatePeer,
  mcapPerFramePeer,
  jsonLinesPeer,
  rawFilePeer,
  rawSqlitePeer,
];

export function peerByName(name: string): Peer {
  const peer = PEERS.find((p) => p.name === name);
  if (!peer)
    throw new Error(`bench: no peer ${JSON.stringify(name)} (known: ${PEERS.map((p) => p.name).join(', ')})`);
  return peer;
}
