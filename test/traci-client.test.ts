/** The TraCI client against a real SUMO: version, steps, subscriptions and context subscriptions. */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { TraciClient } from '../src/ingest/traci/traci-client.js';
import { VAR } from '../src/ingest/traci/traci-protocol.js';
import { fixture } from './helpers/paths.js';

let sumoMissing: string | false = false;
try {
  execFileSync('sumo', ['--version'], { stdio: 'pipe' });
} catch {
  sumoMissing = 'sumo is not installed here (.ci/run installs it: apt-get install sumo sumo-tools)';
}

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

describe('TraCI client', { skip: sumoMissing }, () => {
  it("a context subscription returns the vehicles SUMO finds in range of the ego, the same as each vehicle's own position says", async () => {
    const port = await freePort();
    const sumo = spawn(
      'sumo',
      [
        '-n',
        fixture('limsim-networks', 'bigInter', 'bigInter.net.xml'),
        '-r',
        fixture('limsim-networks', 'bigInter', 'bigInter.rou.xml'),
        '--step-length',
        '0.1',
        '--remote-port',
        String(port),
        '--no-step-log',
        'true',
      ],
      { stdio: 'ignore', env: { SUMO_HOME: '/usr/share/sumo', ...process.env } },
    );
    const client = await TraciClient.connect(port);
    try {
      const version = await client.getVersion();
      assert.ok(version.api >= 18, `TraCI API ${version.api}`);
      await client.setOrder(1);
      await client.subscribe('simulation', '', [VAR.DEPARTED_VEHICLES_IDS]);
      const range = 60;
      let compared = 0;
      let egoSubscribed = false;
      for (let step = 0; step < 400; step++) {
        const results = await client.simulationStep();
        const departed =
          (results
            .find((r) => r.domain === 'simulation')
            ?.values.get(VAR.DEPARTED_VEHICLES_IDS) as string[]) ?? [];
        for (const id of departed) {
          await client.subscribe('vehicle', id, [VAR.POSITION3D]);
          if (id === '5') {
            const first = await client.subscribeContext('vehicle', '5', 'vehicle', range, [VAR.POSITION3D]);
            assert.ok(first?.context?.has('5'), 'the ego is in its own context');
            egoSubscribed = true;
          }
        }
        const context = results.find((r) => r.context && r.id === '5')?.context;
        if (!egoSubscribed || !context) continue;
        const positions = new Map(
          results
            .filter((r) => r.domain === 'vehicle' && !r.context)
            .map((r) => [r.id, r.values.get(VAR.POSITION3D) as number[]]),
        );
        const ego = positions.get('5');
        if (!ego) continue;
        for (const [id, p] of positions) {
          const d = Math.hypot(p[0]! - ego[0]!, p[1]! - ego[1]!);
          if (Math.abs(d - range) < 6) continue; // SUMO measures to the nearest point of a vehicle's shape
          assert.equal(context.has(id), d < range, `vehicle ${id} at ${d.toFixed(1)} m at step ${step}`);
          compared++;
        }
        for (const [id, values] of context)
          assert.deepEqual(
            values.get(VAR.POSITION3D),
            positions.get(id),
            `${id}'s context values are its values`,
          );
      }
      assert.ok(compared > 200, `${compared} vehicle-steps compared`);
    } finally {
      await client.close();
      sumo.kill('SIGKILL');
    }
  });
});
