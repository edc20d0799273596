// Lesson 4: how five calibration methods choose a range on the MiniLM activation — MinMax,
// percentile, histogram/L2, entropy and an MSE search — each one a framework's observer run by
// the engine, its derivation (the steps and candidate table of its search, `Engine.explain`)
// shown as the explorer's "Why this range?" shows it (panel.js `renderDerivation`).
import { h, fmtNum, prose, canvas, drawHist } from './kit.js';
import { renderDerivation, seriesColor } from '../../lib/panel.js';

/** The methods, one observer each, with what the lesson calls them. */
export const METHODS = [
  ['torch.MinMaxObserver', 'MinMax', 'the smallest and largest value seen'],
  ['ort.PercentileCalibrater', 'percentile', 'drops the top 0.001 % of magnitudes'],
  ['torch.HistogramObserver', 'histogram / L2', 'searches a histogram for the range with the least squared error'],
  ['modelopt.HistogramCalibrator.entropy', 'entropy (KL)', 'keeps the distribution closest in information (KL divergence)'],
  ['quark.PerTensorMSEObserver', 'MSE search', 'tries candidate ranges and measures each one’s error'],
];

export const lesson = {
  slug: 'observers',
  title: 'How calibration methods choose a range',
  summary: 'MinMax, percentile, histogram, entropy and MSE search, step by step',
  build(ctx) {
    const setting = { method: METHODS[2][0] };
    let reports = null;
    let hist = null;
    const histCanvas = canvas('Histogram of the activation with the range the chosen method picked');
    const table = h('table', { class: 'data-table lesson-table' });
    const figure = ctx.figure('The activation’s values (log counts) with the range the chosen method keeps (lines in its colour) and the range its integer grid covers (shaded); clipped values in orange. The table lists every method’s range and error.', histCanvas, table);
    const derivation = h('div', { class: 'why' }, h('h3', { text: 'How this method got there' }), h('div', { class: 'derivation', 'aria-live': 'polite' }));
    const radios = h('fieldset', { class: 'lesson-control method-choice' }, h('legend', { text: 'method' }),
      ...METHODS.map(([id, name, what], i) => {
        const input = h('input', { type: 'radio', name: 'learn-method', value: id, 'data-control': 'method', checked: id === setting.method });
        input.addEventListener('change', () => {
          setting.method = id;
          show();
        });
        const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true', style: { background: seriesColor(i) } });
        return h('label', { title: id }, input, ' ', swatch, ' ', h('strong', { text: name }), h('span', { class: 'muted', text: ` — ${what}` }));
      }));
    const link = ctx.explorerLink({});

    /** Draw the chosen method's range and derivation (asked again of the engine). */
    const show = ctx.updater(async () => {
      if (!reports) return;
      const id = setting.method;
      const i = METHODS.findIndex(([m]) => m === id);
      const report = reports[i];
      const steps = await ctx.call('explain', { id, view: true });
      if (!ctx.live) return;
      drawHist(histCanvas, hist, { clip: report.view.clip, grid: report.view.grid, color: i, observer: id });
      table.querySelectorAll('tbody tr').forEach((tr, k) => tr.classList.toggle('chosen', k === i));
      renderDerivation(derivation, steps);
      ctx.drew(figure, { method: id, clip: report.view.clip, mse: report.metrics.mse });
    });

    const update = ctx.updater(async () => {
      ({ hist } = await ctx.useDemo('activation'));
      const got = [];
      for (const [id] of METHODS) got.push(await ctx.call('observe', { id, params: {}, view: true }));
      if (!ctx.live) return;
      reports = got;
      table.replaceChildren(
        h('caption', { class: 'visually-hidden', text: 'The range and error of every method' }),
        h('thead', {}, h('tr', {}, ...['method', 'range kept', 'MSE', 'SQNR'].map((t, k) => h('th', { scope: 'col', class: k ? 'num' : null, text: t })))),
        h('tbody', {}, ...reports.map((r, k) => h('tr', {},
          h('td', { text: METHODS[k][1] }),
          h('td', { class: 'num', text: `${fmtNum(r.view.clip[0])} … ${fmtNum(r.view.clip[1])}` }),
          h('td', { class: 'num', text: fmtNum(r.metrics.mse) }),
          h('td', { class: 'num', text: `${fmtNum(r.metrics.sqnr_db)} dB` })))),
      );
      ctx.setExplorerState(link, { observers: METHODS.map(([id]) => id), demo: 'activation' });
      await show();
    });

    ctx.layout({
      text: prose(
        'Every framework must pick the range its integer grid covers before it can quantize an activation, and each picks it its own way, from the same calibration data.',
        'MinMax takes the extremes. Percentile ignores a tiny share of the largest magnitudes. The histogram methods first count the values in bins, then search the histogram: PyTorch’s for the range with the least squared error (L2), ModelOpt’s entropy method for the one whose quantized distribution loses the least information. An MSE search quantizes with many candidate ranges and keeps the one with the smallest error.',
        'Pick a method: the figure shows the range it chose on this activation, and below, the engine’s derivation — the formula, the numbers and, for a search, the table of candidates with the one it picked highlighted. These are the frameworks’ own steps, reproduced bit for bit.',
      ),
      controls: [radios],
      figure,
      extra: [derivation],
      task: ctx.tryIt({
        question: ['On this activation, which method gives the smallest quantization error (MSE)?'],
        choices: METHODS.map(([id, name]) => [id, name]),
        check: () => reports && ((answer) => {
          const best = reports.reduce((a, b) => (b.metrics.mse < a.metrics.mse ? b : a));
          return answer === best.observer ? { ok: true, why: `Right: ${fmtNum(best.metrics.mse)} is the smallest MSE in the table.` } : { ok: false, why: answer ? null : 'Pick one of the methods.' };
        }),
        hint: () => 'Compare the MSE column of the table: the smaller, the better.',
      }),
      link,
    });
    update();
  },
};
