// Lesson 3: outliers and the clipping trade-off, on the MiniLM activation (a few values at about
// 14σ). The engine's error-versus-clipping curve (symmetric grid, the bits chosen) is drawn with
// the threshold the slider picks among its points marked; the histogram shows that range.
import { drawCurve } from '../../pkg/quantscope.js';
import { fitCanvas } from '../../lib/panel.js';
import { h, fmtNum, prose, select, slider, canvas, drawHist, numberCheck, factsText } from './kit.js';

const POINTS = 200;
/** The marker of the student's threshold: colour index of the engine's palette. */
const PICK_COLOR = 1;

export const lesson = {
  slug: 'clipping',
  title: 'Outliers and clipping',
  summary: 'why cutting off the largest values can make the error smaller',
  build(ctx) {
    const setting = { bits: 4, point: null };
    let curve = null;
    let hist = null;
    const histCanvas = canvas('Histogram of the activation with the clipping range you chose');
    const curveCanvas = canvas('Mean squared error against clipping threshold, your threshold marked', 'lesson-canvas curve');
    const readout = h('dl', { class: 'facts lesson-facts' });
    const figure = ctx.figure('Top: the activation’s values (log counts) and the range [−t, t] the grid covers; values outside are clipped (orange). Bottom: the error of the whole tensor for every threshold t, your choice marked.', histCanvas, readout, curveCanvas);
    const thresholdSlider = slider('threshold', 'clipping threshold t (point of the curve)', { min: 0, max: POINTS - 1, value: POINTS - 1 }, (v) => {
      setting.point = v;
      draw();
    }, (v) => (curve ? fmtNum(curve.points[v][0]) : String(v)));
    const rangeInput = thresholdSlider.querySelector('input');
    const controls = [
      select('bits', 'integers of', [2, 3, 4, 5, 6, 8].map((b) => [b, `${b} bits`]), setting.bits, (v) => {
        setting.bits = Number(v);
        update();
      }),
      thresholdSlider,
    ];
    const link = ctx.explorerLink({});
    const facts = h('span', { text: '…' });
    const diagnosis = h('span', { text: '' });

    /** Draw the histogram and curve at the slider's point (the engine's numbers only). */
    const draw = () => {
      if (!curve || !hist || !ctx.live) return;
      const i = Math.min(setting.point ?? curve.points.length - 1, curve.points.length - 1);
      const [t, mse, sqnr] = curve.points[i];
      drawHist(histCanvas, hist, { clip: [-t, t], grid: [-t, t], observer: 'your threshold' });
      const marker = { observer: 'your threshold', color: PICK_COLOR, threshold: t, slice: 'channel', mse, sqnr_db: sqnr };
      const ratio = fitCanvas(curveCanvas);
      drawCurve(curveCanvas, { ...curve, markers: [marker] }, { sqnr: false, logCounts: false, pixelRatio: ratio, legend: true });
      thresholdSlider.querySelector('output').textContent = fmtNum(t);
      rangeInput.setAttribute('aria-valuetext', `t = ${fmtNum(t)}`);
      readout.replaceChildren(...[
        ['threshold t', fmtNum(t)],
        ['MSE', fmtNum(mse)],
        ['SQNR', sqnr === null ? '—' : `${fmtNum(sqnr)} dB`],
        ['largest |value|', fmtNum(curve.points[curve.points.length - 1][0])],
      ].map(([k, v]) => h('div', {}, h('dt', { text: k }), h('dd', { text: v }))));
      ctx.drew(figure, { bits: setting.bits, point: i, threshold: t, mse, sqnr_db: sqnr });
    };

    const update = ctx.updater(async () => {
      const { bits } = setting;
      const loaded = await ctx.useDemo('activation');
      hist = loaded.hist;
      facts.textContent = factsText(loaded.summary, ['range', 'mean ± std']);
      const found = await ctx.call('diagnose', { outcomes: [] });
      diagnosis.textContent = found ? found.text : '';
      const view = await ctx.call('curve', { spec: { bits, scheme: 'symmetric', points: POINTS }, ids: [], colors: [] });
      if (!ctx.live) return;
      curve = view;
      rangeInput.max = String(curve.points.length - 1);
      if (setting.point === null) setting.point = curve.points.length - 1;
      rangeInput.value = String(setting.point);
      draw();
      ctx.setExplorerState(link, { observers: ['torch.MinMaxObserver', 'torch.HistogramObserver'], curve: { bits, scheme: 'symmetric', metric: 'mse' }, demo: 'activation' });
    });

    ctx.layout({
      text: prose(
        ['This activation is the output of the encoder’s first layer on 560 tokens (', facts, '). Most values sit near the middle, but a handful lie far out: outliers. The engine’s diagnosis: ', diagnosis],
        'A symmetric grid covers the range [−t, t]. If t is the largest value, nothing is clipped, but the steps are wide and every ordinary value is rounded coarsely. If t is smaller, the steps are finer for the bulk, and the few values beyond t are clipped to ±t — a large error for them.',
        'The curve shows the total error (MSE) for every threshold. Slide t from the right (no clipping) to the left and find where the error is smallest: that is the trade-off every calibration method tries to settle.',
      ),
      controls,
      figure,
      task: ctx.tryIt({
        question: ['At the bits chosen above, what SQNR (dB, one decimal) does the best clipping threshold reach?'],
        placeholder: 'dB',
        check: () => curve && curve.best !== null && numberCheck(curve.points[curve.best][2], { tolerance: 0.051, unit: ' dB' }),
        hint: () => 'Slide t until your marker sits on the best point of the curve, and read the SQNR above the curve.',
      }),
      link,
    });
    update();
  },
};
