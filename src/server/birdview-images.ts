import { encode as encodePng } from 'fast-png';
import { BIRDVIEW_SIZE, renderBirdview } from '../formats/didrive/birdview.js';
import { birdviewSceneAt, loadBirdviewBasis, type BirdviewBasis } from '../formats/didrive/birdview-scene.js';
import type { RunSource } from '../model/run-ports.js';
import type { StoreBackend } from '../model/store-port.js';
import { storeRunSource } from '../replay/run-source.js';

/** Runs whose basis is kept ready: a viewer scrubbing one run asks many times in a row. */
const KEPT_RUNS = 2;

/**
 * DI-drive's bird's-eye view of a moment as a PNG in `visualize_birdview`'s colours (what `simrec
 * birdview` writes), for the viewer. What a run's views share (its map, the ego's path) is read once
 * and kept while it is one of the last runs asked about, or read afresh each time while it records;
 * each view reads the other actors' and the lights' states of its moment only, so that the server's
 * memory does not grow with the run.
 */
export class BirdviewCache {
  private readonly bases = new Map<number, Promise<BirdviewBasis>>();
  private readonly store: StoreBackend;

  constructor(store: StoreBackend) {
    this.store = store;
  }

  async png(run: number, t: number): Promise<Uint8Array> {
    const source = await storeRunSource(this.store, run);
    const birdview = renderBirdview(await birdviewSceneAt(await this.basisOf(source), source, t));
    return encodePng({
      width: BIRDVIEW_SIZE,
      height: BIRDVIEW_SIZE,
      data: birdview.rgb(),
      channels: 3,
      depth: 8,
    });
  }

  private basisOf(source: RunSource): Promise<BirdviewBasis> {
    const run = source.run.id;
    if (source.run.state === 'recording') return loadBirdviewBasis(source);
    let basis = this.bases.get(run);
    if (!basis) {
      basis = loadBirdviewBasis(source);
      basis.catch(() => this.bases.delete(run));
      this.bases.set(run, basis);
      while (this.bases.size > KEPT_RUNS) this.bases.delete(this.bases.keys().next().value!);
    }
    return basis;
  }
}
