import { encode as encodePng } from 'fast-png';
import { BIRDVIEW_SIZE, renderBirdview } from '../formats/didrive/birdview.js';
import { loadBirdviewSource, type BirdviewSource } from '../formats/didrive/birdview-scene.js';
import type { StoreBackend } from '../model/store-port.js';
import { storeRunSource } from '../replay/run-source.js';

/** Runs whose scenes are kept ready: a viewer scrubbing one run asks many times in a row. */
const KEPT_RUNS = 2;

/**
 * DI-drive's bird's-eye view of a moment as a PNG in `visualize_birdview`'s colours (what `simrec
 * birdview` writes), for the viewer. A run's scene is read once and kept while it is one of the last
 * runs asked about; a run still recording is read afresh each time, as it grows.
 */
export class BirdviewCache {
  private readonly sources = new Map<number, Promise<BirdviewSource>>();
  private readonly store: StoreBackend;

  constructor(store: StoreBackend) {
    this.store = store;
  }

  async png(run: number, t: number): Promise<Uint8Array> {
    const source = await this.sourceOf(run);
    const birdview = renderBirdview(source.sceneAt(t));
    return encodePng({
      width: BIRDVIEW_SIZE,
      height: BIRDVIEW_SIZE,
      data: birdview.rgb(),
      channels: 3,
      depth: 8,
    });
  }

  private async sourceOf(run: number): Promise<BirdviewSource> {
    const runSource = await storeRunSource(this.store, run);
    if (runSource.run.state === 'recording') return loadBirdviewSource(runSource);
    let source = this.sources.get(run);
    if (!source) {
      source = loadBirdviewSource(runSource);
      source.catch(() => this.sources.delete(run));
      this.sources.set(run, source);
      while (this.sources.size > KEPT_RUNS) this.sources.delete(this.sources.keys().next().value!);
    }
    return source;
  }
}
