/**
 * The TraCI client against a real SUMO: version, steps, subscriptions and context subscriptions; and
 * the layout of a context subscription's answer, byte by byte, as TraCI's documentation gives it.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { TraciClient, type SubscriptionResult } from '../src/ingest/traci/traci-client.js';
import {
  contextValueAt,
  readContextColumns,
  StringTable,
  TRACI,
  TraciReader,
  TraciWriter,
  TYPE,
  VAR,
  type ContextColumn,
} from '../src/ingest/traci/traci-protocol.js';
import { VEHICLE_VARS } from '../src/ingest/traci/sumo-variables.js';
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

describe("a context subscription's answer", () => {
  /** Objects' values as SUMO writes them: per object its id, then per variable its id, status and value. */
  const answer = (objects: [string, [number, number, (w: TraciWriter) => void][]][]): TraciReader => {
    const w = new TraciWriter();
    for (const [id, values] of objects) {
      w.string(id);
      for (const [variable, status, write] of values) write(w.ubyte(variable).ubyte(status));
    }
    return new TraciReader(w.toBuffer());
  };
  const OK = TRACI.RTYPE_OK;
  const ERR = TRACI.RTYPE_ERR;
  const double = (v: number) => (w: TraciWriter) => void w.ubyte(TYPE.DOUBLE).double(v);
  const int = (v: number) => (w: TraciWriter) => void w.ubyte(TYPE.INTEGER).int(v);
  const text = (v: string) => (w: TraciWriter) => void w.ubyte(TYPE.STRING).string(v);
  const position = (x: number, y: number, z: number) => (w: TraciWriter) =>
    void w.ubyte(TYPE.POSITION_3D).double(x).double(y).double(z);
  const position2d = (x: number, y: number) => (w: TraciWriter) =>
    void w.ubyte(TYPE.POSITION_2D).double(x).double(y);
  const list = (v: string[]) => (w: TraciWriter) => {
    w.ubyte(TYPE.STRINGLIST).int(v.length);
    for (const s of v) w.string(s);
  };

  it('is read into a column per variable, by kind: numbers and positions as doubles, strings, anything else as read', () => {
    const reader = answer([
      [
        'veh0',
        [
          [VAR.SPEED, OK, double(13.5)],
          [VAR.SIGNALS, OK, int(8)],
          [VAR.POSITION3D, OK, position(1, 2, 3)],
          [VAR.LANE_ID, OK, text('E0_0')],
          [VAR.EDGES, OK, list(['E0', 'E1'])],
        ],
      ],
      [
        'veh1',
        [
          [VAR.SPEED, ERR, text('no speed')],
          [VAR.SIGNALS, OK, int(-1)],
          [VAR.POSITION3D, OK, position(-0, 5e-324, 1e308)],
          [VAR.LANE_ID, OK, text('')],
          [VAR.EDGES, OK, list([])],
        ],
      ],
    ]);
    const { ids, columns } = readContextColumns(reader, 2, 5);
    assert.equal(reader.remaining, 0, 'every byte read');
    assert.deepEqual(ids, ['veh0', 'veh1']);
    const speed = columns.get(VAR.SPEED) as Extract<ContextColumn, { kind: 'number' }>;
    assert.equal(speed.kind, 'number');
    assert.equal(speed.values[0], 13.5);
    assert.ok(
      Number.isNaN(speed.values[1]!),
      'a refused value leaves its row empty (its error text skipped)',
    );
    assert.equal(contextValueAt(speed, 1), undefined);
    assert.deepEqual((columns.get(VAR.SIGNALS) as { values: number[] }).values, [8, -1]);
    const pos = columns.get(VAR.POSITION3D) as Extract<ContextColumn, { kind: 'position' }>;
    assert.equal(pos.kind, 'position');
    assert.equal(pos.dims, 3);
    assert.ok(Object.is(pos.x[1], -0), 'bit for bit: -0');
    assert.equal(pos.y[1], 5e-324);
    assert.equal(pos.z[1], 1e308);
    assert.deepEqual(contextValueAt(pos, 0), [1, 2, 3], 'a row reads back as TraCI gives it');
    assert.deepEqual(columns.get(VAR.LANE_ID), { kind: 'string', values: ['E0_0', ''] });
    assert.deepEqual(columns.get(VAR.EDGES), { kind: 'value', values: [['E0', 'E1'], []] });
  });

  it("keeps every value of a variable whose type changes from object to object (a server that is not SUMO's)", () => {
    const reader = answer([
      [
        'a',
        [
          [VAR.ANGLE, OK, double(90)],
          [VAR.POSITION3D, OK, position(1, 2, 3)],
        ],
      ],
      [
        'b',
        [
          [VAR.ANGLE, OK, text('ninety')],
          [VAR.POSITION3D, OK, position2d(4, 5)],
        ],
      ],
      [
        'c',
        [
          [VAR.ANGLE, OK, int(45)],
          [VAR.POSITION3D, ERR, text('gone')],
        ],
      ],
    ]);
    const { columns } = readContextColumns(reader, 3, 2);
    assert.deepEqual(columns.get(VAR.ANGLE), { kind: 'value', values: [90, 'ninety', 45] });
    assert.deepEqual(columns.get(VAR.POSITION3D), { kind: 'value', values: [[1, 2, 3], [4, 5], undefined] });
  });

  it("gives the same strings through a connection's string table as without one, whatever their bytes", () => {
    const words = [
      'veh0',
      'veh1',
      'E0_0',
      '',
      'veh0',
      'Straße_1',
      'x'.repeat(65),
      'E0_0',
      'veh1',
      '日本',
      'veh0',
      // These two share their hash in the table: the second must not read as the first.
      'veh698098',
      'veh870216',
      'veh698098',
      'veh870216',
    ];
    const w = new TraciWriter();
    for (const word of words) w.string(word);
    const bytes = w.toBuffer();
    // A table of two: most reads miss or replace what it holds, and it is emptied as it fills.
    for (const table of [new StringTable(2), new StringTable()]) {
      const reader = new TraciReader(bytes, 0, table);
      for (const word of words) assert.equal(reader.string(), word);
      assert.equal(reader.remaining, 0);
      // Again, now that the table knows them.
      const again = new TraciReader(bytes, 0, table);
      for (const word of words) assert.equal(again.string(), word);
    }
  });

  it('names the byte where an answer ends too soon', () => {
    const whole = answer([['veh0', [[VAR.SPEED, OK, double(1)]]]]).buf;
    assert.throws(
      () => readContextColumns(new TraciReader(whole.subarray(0, whole.length - 3)), 1, 1),
      /message ends at byte 16 while reading a double at byte 11/,
    );
  });
});

/** The vehicles that departed in a step, from the simulation's subscription. */
const departedIn = (results: SubscriptionResult[]): string[] =>
  (results.find((r) => r.domain === 'simulation')?.values.get(VAR.DEPARTED_VEHICLES_IDS) as string[]) ?? [];

/** SUMO on LimSim's bigInter, listening for TraCI; `stop` ends it. */
async function startSumo(): Promise<{ client: TraciClient; stop: () => Promise<void> }> {
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
  return {
    client,
    async stop() {
      await client.close();
      sumo.kill('SIGKILL');
    },
  };
}

describe('TraCI client', { skip: sumoMissing }, () => {
  it("a context subscription's columns hold, for every vehicle, what the vehicle's own subscription says", async () => {
    const { client, stop } = await startSumo();
    try {
      await client.setOrder(1);
      await client.subscribe('simulation', '', [VAR.DEPARTED_VEHICLES_IDS]);
      const [junction] = await client.idList('junction');
      await client.subscribeContext('junction', junction!, 'vehicle', 1e7, VEHICLE_VARS);
      let compared = 0;
      for (let step = 0; step < 300; step++) {
        const results = await client.simulationStep();
        const departed = departedIn(results);
        for (const id of departed) await client.subscribe('vehicle', id, VEHICLE_VARS);
        const own = new Map(
          results.filter((r) => r.domain === 'vehicle' && !r.contextColumns).map((r) => [r.id, r.values]),
        );
        const context = results.find((r) => r.contextColumns)?.contextColumns;
        if (!context || context.ids.length === 0) continue;
        // Kept by kind, not as a value per vehicle.
        assert.equal(context.columns.get(VAR.POSITION3D)?.kind, 'position');
        assert.equal(context.columns.get(VAR.SPEED)?.kind, 'number');
        assert.equal(context.columns.get(VAR.SIGNALS)?.kind, 'number');
        assert.equal(context.columns.get(VAR.LANE_ID)?.kind, 'string');
        context.ids.forEach((id, o) => {
          const values = own.get(id);
          if (!values) return; // departed this step: its own subscription starts with the next
          for (const variable of VEHICLE_VARS)
            assert.deepEqual(
              contextValueAt(context.columns.get(variable)!, o),
              values.get(variable),
              `vehicle ${id}, variable 0x${variable.toString(16)}, step ${step}`,
            );
          compared++;
        });
      }
      assert.ok(compared > 1000, `${compared} vehicle-steps compared`);
    } finally {
      await stop();
    }
  });

  it("a context subscription returns the vehicles SUMO finds in range of the ego, the same as each vehicle's own position says", async () => {
    const { client, stop } = await startSumo();
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
        const departed = departedIn(results);
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
      await stop();
    }
  });
});
