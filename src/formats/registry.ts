import type { FormatCodec } from '../model/codec-port.js';

/**
 * The format codecs `simrec import FORMAT` and `simrec export RUN FORMAT` know. A codec is a folder
 * under src/formats and a line here; its module (and whatever heavy dependency it has) loads only
 * when it is used.
 */

export const FORMAT_CODECS: Record<string, () => Promise<FormatCodec>> = {
  limsim: async () => (await import('./limsim/index.js')).limsimCodec,
  perception: async () => (await import('./perception/codec.js')).perceptionCodec,
  solo: async () => (await import('./solo/codec.js')).soloCodec,
  coco: async () => (await import('./coco/codec.js')).cocoCodec,
  yolo: async () => (await import('./yolo/codec.js')).yoloCodec,
  soda: async () => (await import('./soda/codec.js')).sodaCodec,
  didrive: async () => (await import('./didrive/index.js')).didriveCodec,
};

export const formatNames = (): string[] => Object.keys(FORMAT_CODECS);
