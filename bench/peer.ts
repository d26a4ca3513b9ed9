import type { BenchSize, TrafficGenerator } from './generator.js';

export interface RecordArgs {
  /** An empty directory the peer writes its files into; its size afterwards is the peer's footprint. */
  dir: string;
  frames: TrafficGenerator;
  /**
   * Every this many steps the producer waits until what it wrote is durable (fsync), as a simulator
   * applying backpressure would. Every peer commits at the same points, so they pay for the same number of
   * durable writes and differ only in how they lay the data out.
   */
  commitEverySteps: number;
}

/** The read side of a peer, over the files its record step left in `dir`. */
export interface PeerReader {
  /** Every actor's state at time t (microseconds); returns how many actor states it decoded. */
  scene(t: number): Promise<number>;
  /** One actor's states over the whole run; returns how many it decoded. */
  trajectory(actor: string): Promise<number>;
  close(): Promise<void>;
}

export interface Peer {
  name: string;
  /** One line for the report: what exactly is measured. */
  description: string;
  record(args: RecordArgs): Promise<void>;
  /** Absent for write-only peers; `readNote` then says why. */
  open?(dir: string, size: BenchSize): Promise<PeerReader>;
  readNote?: string;
  /** Peers that answer a scene only by a full scan would take hours for 1,000 seeks: trajectory only. */
  seekable?: boolean;
}
