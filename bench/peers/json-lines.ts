import { closeSync, createReadStream, fsyncSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { actorId, LANE_IDS } from '../generator.js';
import type { Peer } from '../peer.js';

const JSONL_FILE = 'bench.jsonl';

/** What many simulators log first: one JSON object per actor-state per line, appended to a file. */
export const jsonLinesPeer: Peer = {
  name: 'json-lines',
  description: 'one JSON line per actor-state, one write and fsync per commit point',
  async record({ dir, frames, commitEverySteps }) {
    const { actors, steps } = frames.size;
    const fd = openSync(join(dir, JSONL_FILE), 'w');
    const ids = Array.from({ length: actors }, (_, i) => actorId(i));
    let lines: string[] = [];
    for (let s = 0; s < steps; s++) {
      const f = frames.next();
      for (let i = 0; i < actors; i++)
        lines.push(
          JSON.stringify({
            t: f.t,
            step: f.step,
            id: ids[i],
            x: f.x[i],
            y: f.y[i],
            yaw: f.yaw[i],
            speed: f.speed[i],
            accel: f.accel[i],
            lane: LANE_IDS[f.lane[i]!],
            lanePos: f.lanePos[i],
            routeIdx: f.routeIdx[i],
          }),
        );
      lines.push(JSON.stringify({ t: f.t, step: f.step, id: 'ego', control: f.control }));
      lines.push(JSON.stringify({ t: f.t, step: f.step, id: 'ego', wheels: f.wheels }));
      if ((s + 1) % commitEverySteps === 0 || s === steps - 1) {
        writeSync(fd, lines.join('\n') + '\n');
        fsyncSync(fd);
        lines = [];
      }
    }
    closeSync(fd);
  },
  async open(dir) {
    const path = join(dir, JSONL_FILE);
    return {
      scene: () => Promise.reject(new Error('json-lines has no index: a scene is a full scan')),
      async trajectory(actor) {
        let states = 0;
        const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
        for await (const line of lines) {
          const row = JSON.parse(line) as { id: string; x?: number };
          if (row.id === actor && row.x !== undefined) states++;
        }
        return states;
      },
      close: async () => {},
    };
  },
  seekable: false,
};
