import { connect, type Socket } from 'node:net';
import { SimrecError } from '../../model/errors.js';
import {
  commandsOf,
  contextValueAt,
  DOMAINS,
  nextCommand,
  encodeCommand,
  encodeMessage,
  TRACI,
  TraciReader,
  TraciWriter,
  readContextColumns,
  StringTable,
  type ContextColumns,
  type Domain,
  type TraciValue,
} from './traci-protocol.js';

/** One object's subscribed values after a step: variable id -> value. */
export interface SubscriptionResult {
  domain: Domain;
  id: string;
  values: Map<number, TraciValue>;
  /** For a context subscription: every object in range, id -> its values. */
  context?: Map<string, Map<number, TraciValue>>;
  /** For a context subscription: the domain of the objects in range (vehicles, persons...). */
  contextDomain?: Domain;
  /** For a context subscription: the objects in range, and each variable's column of their values. */
  contextColumns?: ContextColumns;
}

const RESPONSE_TO_DOMAIN = new Map<number, Domain>(
  (Object.entries(DOMAINS) as [Domain, { subscribe: number }][]).map(([domain, ids]) => [
    ids.subscribe + 0x10,
    domain,
  ]),
);
const GET_TO_DOMAIN = new Map<number, Domain>(
  (Object.entries(DOMAINS) as [Domain, { get: number }][]).map(([domain, ids]) => [ids.get, domain]),
);
const CONTEXT_RESPONSE_TO_DOMAIN = new Map<number, Domain>(
  (Object.entries(DOMAINS) as [Domain, { subscribeContext: number }][]).map(([domain, ids]) => [
    ids.subscribeContext + 0x10,
    domain,
  ]),
);

/**
 * A TraCI client. Requests are answered in the order they are sent, so several may be in flight (a
 * recorder keeps a few steps ahead: SUMO never waits for this process between steps). Every method
 * resolves with SUMO's answer or rejects with SUMO's own error text.
 */
export class TraciClient {
  private readonly socket: Socket;
  private buffered: Buffer = Buffer.alloc(0);
  /** Requests sent and not yet answered, oldest first: SUMO answers messages in the order sent. */
  private readonly waiting: { resolve(message: Buffer): void; reject(error: Error): void }[] = [];
  private closedError: Error | null = null;
  /** The same vehicle and lane ids step after step are the same strings (see StringTable). */
  private readonly strings = new StringTable();

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (data) => {
      this.buffered = this.buffered.length ? Buffer.concat([this.buffered, data]) : data;
      this.deliver();
    });
    const fail = (error: Error): void => {
      this.closedError ??= error;
      for (const waiting of this.waiting.splice(0)) waiting.reject(this.closedError);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('TraCI: SUMO closed the connection')));
  }

  /** Connects, retrying while SUMO starts up (it listens only once it has loaded the network). */
  static async connect(
    port: number,
    options: { host?: string; timeoutMs?: number; givenUp?: () => Error | null } = {},
  ): Promise<TraciClient> {
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const abandon = options.givenUp?.();
      if (abandon) throw abandon;
      try {
        const socket = await new Promise<Socket>((resolve, reject) => {
          const s = connect({ port, host: options.host ?? '127.0.0.1' }, () => resolve(s));
          s.once('error', reject);
        });
        socket.setNoDelay(true);
        return new TraciClient(socket);
      } catch (error) {
        if (Date.now() > deadline)
          throw new SimrecError(
            'io',
            `TraCI: could not connect to SUMO on port ${port}: ${(error as Error).message}`,
          );
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  private deliver(): void {
    while (this.waiting.length && this.buffered.length >= 4) {
      const length = this.buffered.readInt32BE(0);
      if (this.buffered.length < length) return;
      const message = this.buffered.subarray(0, length);
      this.buffered = this.buffered.subarray(length);
      this.waiting.shift()!.resolve(message);
    }
  }

  /**
   * Sends one message and returns a reader over the answer (after its length). Requests may be
   * pipelined: each is sent at once, and SUMO, which reads its messages in order, answers them in
   * the order sent, so a caller can keep several steps in flight (see simulationStep) without ever
   * waiting a round trip between them.
   */
  private exchange(commands: Buffer[]): Promise<TraciReader> {
    if (this.closedError) return Promise.reject(this.closedError);
    const answer = new Promise<Buffer>((resolve, reject) => this.waiting.push({ resolve, reject }));
    this.socket.write(encodeMessage(commands));
    return answer.then((message) => new TraciReader(message, 4, this.strings));
  }

  /** Reads the status answer to command `id`; throws SUMO's own error text. */
  private static status(reader: TraciReader, id: number): void {
    const length = reader.ubyte();
    if (length === 0) reader.int(); // the length's long form: the fields below are read in order, not measured
    const answered = reader.ubyte();
    const result = reader.ubyte();
    const description = reader.string();
    if (answered !== id)
      throw new SimrecError(
        'io',
        `TraCI: expected the status of command 0x${id.toString(16)}, got 0x${answered.toString(16)}`,
      );
    if (result !== TRACI.RTYPE_OK)
      throw new SimrecError(
        'io',
        `SUMO refused TraCI command 0x${id.toString(16)}: ${description || (result === TRACI.RTYPE_NOTIMPLEMENTED ? 'not implemented' : 'error')}`,
      );
  }

  async getVersion(): Promise<{ api: number; identifier: string }> {
    const reader = await this.exchange([encodeCommand(TRACI.CMD_GETVERSION)]);
    TraciClient.status(reader, TRACI.CMD_GETVERSION);
    for (const command of commandsOf(reader, reader.buf.length))
      if (command.id === TRACI.CMD_GETVERSION)
        return { api: command.content.int(), identifier: command.content.string() };
    throw new SimrecError('io', 'TraCI: SUMO sent no version');
  }

  async setOrder(order: number): Promise<void> {
    const reader = await this.exchange([
      encodeCommand(TRACI.CMD_SETORDER, new TraciWriter().int(order).toBuffer()),
    ]);
    TraciClient.status(reader, TRACI.CMD_SETORDER);
  }

  /** Advances one step (or to `targetTime` seconds); returns every subscription's values. */
  async simulationStep(targetTime = 0): Promise<SubscriptionResult[]> {
    const reader = await this.exchange([
      encodeCommand(TRACI.CMD_SIMSTEP, new TraciWriter().double(targetTime).toBuffer()),
    ]);
    TraciClient.status(reader, TRACI.CMD_SIMSTEP);
    const count = reader.int();
    const results: SubscriptionResult[] = [];
    for (const command of commandsOf(reader, reader.buf.length)) {
      const result = TraciClient.subscriptionResult(command.id, command.content);
      if (result) results.push(result);
    }
    if (results.length !== count)
      throw new SimrecError(
        'io',
        `TraCI: SUMO announced ${count} subscription results and sent ${results.length}`,
      );
    return results;
  }

  /** Subscribes to variables of one object for the rest of the simulation; returns their current values. */
  async subscribe(domain: Domain, id: string, variables: number[]): Promise<SubscriptionResult | undefined> {
    return (await this.subscribeMany([{ domain, id, variables }]))[0];
  }

  /**
   * Several subscriptions in one message, answered in one: a step's departures cost one round trip,
   * not one each (a round trip wakes SUMO and this process: most of what a departure cost). In order;
   * a later subscription of the same object replaces an earlier one. Returns each one's current values.
   */
  async subscribeMany(
    requests: readonly { domain: Domain; id: string; variables: readonly number[] }[],
  ): Promise<(SubscriptionResult | undefined)[]> {
    if (requests.length === 0) return [];
    const commands = requests.map(({ domain, id, variables }) => {
      const content = new TraciWriter()
        .double(-1073741824)
        .double(1073741824)
        .string(id)
        .ubyte(variables.length);
      for (const v of variables) content.ubyte(v);
      return encodeCommand(DOMAINS[domain].subscribe, content.toBuffer());
    });
    const reader = await this.exchange(commands);
    // The answer: per command, its status, then its subscription response.
    return requests.map(({ domain }) => {
      TraciClient.status(reader, DOMAINS[domain].subscribe);
      const answer = nextCommand(reader);
      return answer && TraciClient.subscriptionResult(answer.id, answer.content);
    });
  }

  /**
   * A context subscription: every object of `contextDomain` within `range` metres of object `id`,
   * with the given variables, after every step (LimSim's area of interest, done by SUMO).
   */
  async subscribeContext(
    domain: Domain,
    id: string,
    contextDomain: Domain,
    range: number,
    variables: number[],
  ): Promise<SubscriptionResult | undefined> {
    const content = new TraciWriter()
      .double(-1073741824)
      .double(1073741824)
      .string(id)
      .ubyte(DOMAINS[contextDomain].get)
      .double(range)
      .ubyte(variables.length);
    for (const v of variables) content.ubyte(v);
    const command = DOMAINS[domain].subscribeContext;
    const reader = await this.exchange([encodeCommand(command, content.toBuffer())]);
    TraciClient.status(reader, command);
    for (const c of commandsOf(reader, reader.buf.length)) {
      const result = TraciClient.subscriptionResult(c.id, c.content);
      if (result) return result;
    }
    return undefined;
  }

  /** Variables of one object, asked once (not subscribed), in one round trip; those SUMO refuses are left out. */
  async getMany(domain: Domain, id: string, variables: readonly number[]): Promise<Map<number, TraciValue>> {
    const command = DOMAINS[domain].get;
    const reader = await this.exchange(
      variables.map((v) => encodeCommand(command, new TraciWriter().ubyte(v).string(id).toBuffer())),
    );
    const values = new Map<number, TraciValue>();
    for (const variable of variables) {
      TraciClient.status(reader, command);
      const answer = nextCommand(reader);
      if (!answer || answer.id !== command + 0x10) continue;
      if (answer.content.ubyte() !== variable) continue;
      answer.content.string(); // object id
      values.set(variable, answer.content.typed());
    }
    return values;
  }

  /** The ids of every object of a domain (traffic lights, persons...). */
  async idList(domain: Domain): Promise<string[]> {
    const command = DOMAINS[domain].get;
    const reader = await this.exchange([
      encodeCommand(command, new TraciWriter().ubyte(TRACI.TRACI_ID_LIST).string('').toBuffer()),
    ]);
    TraciClient.status(reader, command);
    for (const c of commandsOf(reader, reader.buf.length))
      if (c.id === command + 0x10) {
        c.content.ubyte(); // variable
        c.content.string(); // object id
        const value = c.content.typed();
        return Array.isArray(value) ? (value as string[]) : [];
      }
    return [];
  }

  private static subscriptionResult(id: number, content: TraciReader): SubscriptionResult | undefined {
    const contextDomain = CONTEXT_RESPONSE_TO_DOMAIN.get(id);
    if (contextDomain) return TraciClient.contextResult(contextDomain, content);
    const domain = RESPONSE_TO_DOMAIN.get(id);
    if (!domain) return undefined;
    const objectId = content.string();
    const count = content.ubyte();
    const values = new Map<number, TraciValue>();
    for (let i = 0; i < count; i++) {
      const variable = content.ubyte();
      const status = content.ubyte();
      const value = content.typed();
      if (status === TRACI.RTYPE_OK) values.set(variable, value);
    }
    return { domain, id: objectId, values };
  }

  /**
   * A context subscription's answer as columns, one value per object in range: no object per vehicle
   * or value (a recorder turns them straight into a frame). `context`, by object, is built only when
   * asked.
   */
  private static contextResult(domain: Domain, content: TraciReader): SubscriptionResult {
    const objectId = content.string();
    const contextDomain = GET_TO_DOMAIN.get(content.ubyte());
    const variables = content.ubyte();
    const objects = content.int();
    const contextColumns = readContextColumns(content, objects, variables);
    let byObject: Map<string, Map<number, TraciValue>> | undefined;
    return {
      domain,
      id: objectId,
      values: new Map(),
      contextColumns,
      get context() {
        if (!byObject) {
          byObject = new Map();
          contextColumns.ids.forEach((id, o) => {
            const values = new Map<number, TraciValue>();
            for (const [variable, column] of contextColumns.columns) {
              const value = contextValueAt(column, o);
              if (value !== undefined) values.set(variable, value);
            }
            byObject!.set(id, values);
          });
        }
        return byObject;
      },
      ...(contextDomain ? { contextDomain } : {}),
    };
  }

  /** Asks SUMO to end the simulation and close; resolves once it has answered or gone. */
  async close(): Promise<void> {
    if (!this.closedError)
      try {
        const reader = await this.exchange([encodeCommand(TRACI.CMD_CLOSE)]);
        TraciClient.status(reader, TRACI.CMD_CLOSE);
      } catch {
        // SUMO may close the socket instead of answering; either way it is done.
      }
    this.socket.destroy();
  }
}
