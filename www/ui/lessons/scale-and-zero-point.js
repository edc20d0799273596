// Lesson 1: scale and zero point on a handful of values the student types. PyTorch's
// MinMaxObserver (the engine's) gives the scale and zero point; Quark's INTQuantizer, given
// exactly those, gives the values back as the integer grid stores them.
import { h, fmtNum, prose, select, canvas, drawHist, codeRange, integerCheck } from './kit.js';
import { renderDerivation } from '../../lib/panel.js';

const OBSERVER = 'torch.MinMaxObserver';
const START = [-1.2, 0.1, 0.35, 0.8, 2.5, -0.4];

/** The observer's parameters for `bits` and `scheme` (affine: unsigned codes; symmetric: signed). */
function observerParams(bits, scheme) {
  const signed = scheme === 'symmetric';
  return { qscheme: `per_tensor_${scheme}`, dtype: signed ? 'qint8' : 'quint8', ...codeRange(bits, signed) };
}

/** The numbers typed in `text` (commas, spaces or semicolons between them), or null. */
function parseValues(text) {
  const parts = text.split(/[\s,;]+/).filter(Boolean).map((s) => Number(s.replace(/[−–]/g, '-')));
  return parts.length >= 2 && parts.length <= 16 && parts.every(Number.isFinite) ? parts : null;
}

export const lesson = {
  slug: 'scale-and-zero-point',
  title: 'Scale and zero point',
  summary: 'how a few real numbers become small integers, and come back',
  build(ctx) {
    const setting = { values: START, bits: 4, scheme: 'affine' };
    let shown = null;

    const input = h('input', { type: 'text', id: 'learn-values', 'data-control': 'values', value: START.join(', '), size: 34, 'aria-describedby': 'learn-values-note' });
    const note = h('span', { id: 'learn-values-note', class: 'muted', text: '2 to 16 numbers' });
    input.addEventListener('change', () => {
      const values = parseValues(input.value);
      input.setAttribute('aria-invalid', values ? 'false' : 'true');
      note.textContent = values ? '2 to 16 numbers' : 'Type 2 to 16 numbers, e.g. −1.2, 0.1, 2.5';
      if (values) {
        setting.values = values;
        update();
      }
    });
    const bitsOptions = [2, 3, 4, 5, 6, 7, 8].map((b) => [b, `${b} bits`]);
    const controls = [
      h('label', { class: 'lesson-control', for: 'learn-values' }, 'values ', input, ' ', note),
      select('bits', 'integers of', bitsOptions, setting.bits, (v) => {
        setting.bits = Number(v);
        update();
      }),
      select('scheme', 'scheme', [['affine', 'affine (unsigned codes, a zero point)'], ['symmetric', 'symmetric (signed codes, zero point 0)']], setting.scheme, (v) => {
        setting.scheme = v;
        update();
      }),
    ];

    const hist = canvas('Histogram of your values with the range the grid represents');
    const table = h('table', { class: 'data-table lesson-table' });
    const numbers = h('dl', { class: 'facts lesson-facts' });
    const figure = ctx.figure('Your values (bars), the range the integers cover (shaded) and where each value comes back after quantize–dequantize.', hist, numbers, table);
    const derivation = h('div', { class: 'why' }, h('h3', { text: 'How the engine got there' }), h('div', { class: 'derivation' }));
    const link = ctx.explorerLink({});

    const update = ctx.updater(async () => {
      const { values, bits, scheme } = setting;
      const { hist: counts } = await ctx.useValues(values);
      const params = observerParams(bits, scheme);
      const report = await ctx.call('observe', { id: OBSERVER, params, view: true });
      if (!report.ok) throw new Error(report.error.message);
      const scale = report.scale[0];
      const zeroPoint = report.zero_point[0];
      const q = await ctx.call('quantize', { id: 'quark.INTQuantizer', params: { scale: [scale], zero_point: [zeroPoint], min_q: params.quant_min, max_q: params.quant_max } });
      const steps = await ctx.call('explain', { id: OBSERVER, view: true });
      if (!ctx.live) return;
      shown = { scale, zeroPoint, report };
      drawHist(hist, counts, { clip: report.view.clip, grid: report.view.grid });
      numbers.replaceChildren(
        ...[
          ['scale s', fmtNum(scale)],
          ['zero point', String(zeroPoint)],
          ['integer codes', `${params.quant_min} … ${params.quant_max}`],
          ['range the codes cover', `${fmtNum(report.view.grid[0])} … ${fmtNum(report.view.grid[1])}`],
          ['largest error', fmtNum(report.metrics.max_abs_err)],
        ].map(([k, v]) => h('div', {}, h('dt', { text: k }), h('dd', { text: v }))),
      );
      table.replaceChildren(
        h('caption', { class: 'visually-hidden', text: 'Each value and what comes back' }),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'value' }), h('th', { scope: 'col', class: 'num', text: 'comes back as' }))),
        h('tbody', {}, ...values.map((x, i) => h('tr', {}, h('td', { text: fmtNum(x) }), h('td', { class: 'num', text: fmtNum(q.values[i]) })))),
      );
      renderDerivation(derivation, steps.filter((s) => s.title === 'Scale and zero point'));
      ctx.drew(figure, { values, bits, scheme, scale, zero_point: zeroPoint, dequantized: Array.from(q.values) });
      ctx.setExplorerState(link, { observers: [OBSERVER], params: { [OBSERVER]: params }, demo: 'activation' });
    });

    ctx.layout({
      text: prose(
        'A tensor is a block of real numbers. Quantization stores each of them as a small integer — a code — and keeps one real number, the scale s, to turn codes back into values: value ≈ (code − zero point) × s.',
        'With b bits there are only 2^b codes. The scale spreads them evenly from the smallest to the largest value, so one step of the grid is s. The zero point is the code that stands for 0.0: in the affine scheme it moves the grid so that the codes cover the values’ real range; in the symmetric scheme it is 0 and the grid is centred on zero.',
        'Type your own numbers, change the bits and the scheme, and watch the scale, the zero point and what each value comes back as. Fewer bits mean a coarser grid and larger errors. PyTorch’s MinMaxObserver chooses the range here (the explorer’s first panel).',
      ),
      controls,
      figure,
      extra: [derivation],
      task: ctx.tryIt({
        question: ['With the settings above, which integer code stands for 0.0 — what is the zero point?'],
        placeholder: 'an integer',
        check: () => shown && integerCheck(shown.zeroPoint),
        hint: () => `The zero point is the code that 0.0 maps to. The engine’s formula: ${setting.scheme === 'symmetric' ? 'in the symmetric scheme it is fixed' : 'zp = quant_min − round(min / s)'}, with min = ${fmtNum(shown.report.min_val[0])} and s = ${fmtNum(shown.scale)}.`,
      }),
      link,
    });
    update();
  },
};
