import type uPlot from 'uplot';

/** uPlot's class, once its module has loaded. */
export type PlotClass = typeof uPlot;

let loading: Promise<PlotClass> | null = null;

/**
 * uPlot and its stylesheet, loaded the first time a plot is drawn: they are half of the viewer's
 * script, which a page opening on a run would otherwise parse before its first frame, and most pages
 * never plot (performance-history.md). A failed load is tried again by the next plot.
 */
export function loadPlotting(): Promise<PlotClass> {
  loading ??= Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(
    ([module]) => module.default,
    (error: unknown) => {
      loading = null;
      throw error;
    },
  );
  return loading;
}
