// Lesson 5: floating-point elements (fp8, fp6, fp4) and block scaling (MX: one power-of-two scale
// per block; NVFP4: fp4 with an fp8 scale per 16), on the MiniLM activation, through the engine's
// formats calls (`evaluateFormat`): error and bits per value, every stored scale counted, drawn
// by the engine's formats chart.
import { drawFormats } from '../../pkg/quantscope.js';
import { fitCanvas } from '../../lib/panel.js';
import { h, fmtNum, prose, select, canvas, numberCheck } from './kit.js';

const ELEMENTS = [['fp8_e4m3', 'fp8 E4M3'], ['fp8_e5m2', 'fp8 E5M2'], ['fp6_e2m3', 'fp6 E2M3'], ['fp4_e2m1', 'fp4 E2M1']];
const SHARING = [['tensor', 'the whole tensor'], ['16', 'blocks of 16'], ['32', 'blocks of 32 (MX)'], ['64', 'blocks of 64'], ['128', 'blocks of 128']];
/** Formats the chosen one is compared with. */
const REFERENCES = [
  ['int', { bits: 8 }],
  ['int', { bits: 4 }],
  ['ggml.NVFP4', {}],
  ['mx', { element: 'fp4_e2m1', block_size: 32 }],
  ['mx', { element: 'fp8_e4m3', block_size: 32 }],
  ['minifloat', { element: 'fp8_e4m3' }],
];

/** The format the "try it" task asks about. */
export const TASK = { element: 'fp6_e2m3', sharing: '64' };

/** The format family and parameters of `element` with scales shared by `sharing`. */
export function chosenFormat(element, sharing) {
  return sharing === 'tensor' ? { id: 'minifloat', params: { element } } : { id: 'mx', params: { element, block_size: Number(sharing) } };
}

export const lesson = {
  slug: 'float-formats',
  title: 'Floating-point formats and block scaling',
  summary: 'fp8, fp4, MX and NVFP4: tiny floats with shared scales',
  build(ctx) {
    const setting = { element: 'fp4_e2m1', sharing: '32' };
    let references = null;
    /** The format the "try it" task asks about, measured by the engine. */
    let asked = null;
    const chart = canvas('SQNR against bits per value of the formats, yours highlighted', 'lesson-canvas formats');
    const readout = h('dl', { class: 'facts lesson-facts' });
    const figure = ctx.figure('Each point is one format on this activation: further right costs more bits, higher is more accurate. Your format is highlighted; int8, int4, NVFP4, MXFP4, MXFP8 and fp8 per tensor are there to compare.', readout, chart);
    const link = ctx.explorerLink({});
    const controls = [
      select('element', 'element', ELEMENTS, setting.element, (v) => {
        setting.element = v;
        update();
      }),
      select('sharing', 'one scale for', SHARING, setting.sharing, (v) => {
        setting.sharing = v;
        update();
      }),
    ];

    const update = ctx.updater(async () => {
      await ctx.useDemo('activation');
      if (!references) {
        const rows = [];
        for (const [id, params] of REFERENCES) rows.push(await ctx.call('evaluateFormat', { id, params }));
        references = rows;
        const { id, params } = chosenFormat(TASK.element, TASK.sharing);
        asked = await ctx.call('evaluateFormat', { id, params });
      }
      const { id, params } = chosenFormat(setting.element, setting.sharing);
      const row = await ctx.call('evaluateFormat', { id, params });
      if (!ctx.live) return;
      const points = [...references, row].map((r) => ({ label: r.format, kind: r.id, bits_per_value: r.bits_per_value, sqnr_db: r.sqnr_db, highlighted: r === row }));
      const ratio = fitCanvas(chart);
      drawFormats(chart, { points }, { pixelRatio: ratio });
      readout.replaceChildren(...[
        ['your format', row.format],
        ['bits per value', fmtNum(row.bits_per_value)],
        ['SQNR', `${fmtNum(row.sqnr_db)} dB`],
        ['values clipped', `${fmtNum(row.clipped_fraction * 100)} %`],
      ].map(([k, v]) => h('div', {}, h('dt', { text: k }), h('dd', { text: v }))));
      ctx.drew(figure, { id, params, format: row.format, bits_per_value: row.bits_per_value, sqnr_db: row.sqnr_db });
      ctx.setExplorerState(link, { observers: ['torch.MinMaxObserver'], demo: 'activation', formats: [{ id, params }] });
    });

    ctx.layout({
      text: prose(
        'Integers space their steps evenly. A floating-point number spends some bits on an exponent instead, so its steps are fine near zero and coarse far from it — a good match for values that are mostly small with a few large ones. fp8 E4M3 has 4 exponent bits and 3 mantissa bits; E5M2 trades precision for range; fp4 E2M1 has only 16 values.',
        'A tiny float still needs a scale to fit the tensor. One scale for the whole tensor lets an outlier set it for everyone. Block scaling gives every block of 16 or 32 consecutive values its own scale: MX formats store it as a power of two in 8 bits (E8M0), NVFP4 as an fp8 number per 16 values. Each scale costs bits, which the engine counts in “bits per value”.',
        'Choose an element and how many values share a scale, and see where your format lands against the others.',
      ),
      controls,
      figure,
      task: ctx.tryIt({
        question: ['How many bits does each value really cost in fp6 E2M3 with one 8-bit scale per block of 64 values? Work it out, then check it with the controls.'],
        placeholder: 'bits per value',
        check: () => asked && numberCheck(asked.bits_per_value, { digits: 4, unit: ' bits per value' }),
        hint: () => 'Each value stores its element’s 6 bits, and every block of 64 adds one 8-bit scale, shared by its 64 values.',
      }),
      link,
    });
    update();
  },
};
