import { CHANNELS, VISUAL_COLOURS, type Channel } from '../formats/didrive/birdview.js';

/** What each of DI-drive's bird's-eye view channels shows, in the words of the viewer's legend. */
const LABELS: Record<Channel, string> = {
  road: 'road',
  lane: 'lane lines',
  red_light: 'red light',
  yellow_light: 'yellow light',
  green_light: 'green light',
  vehicle: 'vehicles',
  pedestrian: 'pedestrians',
  hero: 'ego (hero)',
  route: 'route',
};

/**
 * The legend of the bird's-eye view the server draws (`/api/runs/:id/birdview`): each channel in the
 * colour `visualize_birdview` gives it, so the viewer's legend and the picture agree by construction.
 */
export const BIRDVIEW_LEGEND: readonly { channel: Channel; label: string; rgb: readonly number[] }[] =
  CHANNELS.map((channel, i) => ({ channel, label: LABELS[channel], rgb: VISUAL_COLOURS[i]! }));
