// Lesson 7: rotation spreads outliers. Both numbers are the page's engine's: a format on the
// activation as it is (`evaluateFormat`) and on the activation with every row rotated by the
// randomized Hadamard rotation (`evaluateFormat` with `rotate`, src/rotation.rs, the CLI's
// `--rotate`); the activation's per-dimension ranges are PyTorch's per-channel MinMax along the
// hidden axis, drawn by the engine.
import { drawChannels } from '../../pkg/quantscope.js';
import { fitCanvas } from '../../lib/panel.js';
import { h, dbBar, prose, select, canvas, numberCheck } from './kit.js';
import { parseRotation } from '../rotation.js';

/** The rotation applied (as the CLI's `--rotate` spells it). */
export const ROTATION = 'hadamard';
/** The formats the lesson offers: label, format family and its parameters. */
export const FORMATS = [
  ['int8', 'int', { bits: 8 }],
  ['int4', 'int', { bits: 4 }],
  ['int4 per channel', 'int', { axis: 0, bits: 4, granularity: 'per_channel' }],
  ['fp4_e2m1', 'minifloat', { element: 'fp4_e2m1' }],
  ['mxfp4_e2m1', 'mx', { element: 'fp4_e2m1' }],
  ['bnb.nf4', 'bnb.nf4', {}],
  ['ggml.Q4_K', 'ggml.Q4_K', {}],
];
/** The format the "try it" task asks about. */
export const TASK_FORMAT = 'int4';

export const lesson = {
  slug: 'rotation',
  title: 'Rotation spreads outliers',
  summary: 'a Hadamard rotation before quantizing, as QuaRot and SpinQuant do',
  build(ctx) {
    const setting = { format: 'int4' };
    let drawn = false;
    /** The task's answer: the rotated SQNR of TASK_FORMAT, once computed. */
    let taskAfter = null;
    const bars = h('div', { class: 'db-bars', 'aria-label': 'SQNR before and after rotation' });
    const dims = canvas('Range of every hidden dimension of the activation; the widest are labelled', 'lesson-canvas channels');
    const note = h('p', { class: 'muted lesson-note' });
    const diagnosis = h('p', { class: 'lesson-diagnosis' });
    const figure = ctx.figure('Top: SQNR of the chosen format on the activation as it is and after the rotation. Bottom: the range of each of the 384 hidden dimensions before rotation.', bars, note, dims);
    const link = ctx.explorerLink({});
    const controls = [select('format', 'format', FORMATS.map(([label]) => [label, label]), setting.format, (v) => {
      setting.format = v;
      update();
    })];

    const update = ctx.updater(async () => {
      await ctx.useDemo('activation');
      if (!drawn) {
        const perDim = await ctx.call('observe', { id: 'torch.PerChannelMinMaxObserver', params: { ch_axis: 1 }, view: true });
        const found = await ctx.call('diagnose', { outcomes: [] });
        const [, taskId, taskParams] = FORMATS.find(([label]) => label === TASK_FORMAT);
        taskAfter = (await ctx.call('evaluateFormat', { id: taskId, params: taskParams, rotate: ROTATION })).sqnr_db;
        if (!ctx.live) return;
        drawChannels(dims, perDim.view.channels, 1, { logCounts: false, sqnr: false, pixelRatio: fitCanvas(dims) });
        diagnosis.textContent = found ? `The engine’s diagnosis of this activation: ${found.text}` : '';
        drawn = true;
      }
      const [, id, params] = FORMATS.find(([label]) => label === setting.format);
      const before = await ctx.call('evaluateFormat', { id, params });
      const after = await ctx.call('evaluateFormat', { id, params, rotate: ROTATION });
      if (!ctx.live) return;
      note.textContent = `After: ${after.rotation}.`;
      const top = Math.max(before.sqnr_db, after.sqnr_db, 1);
      bars.replaceChildren(dbBar('as it is', before.sqnr_db, top, 'tensor'), dbBar('rotated', after.sqnr_db, top, 'channel'));
      ctx.drew(figure, { format: setting.format, sqnr_before: before.sqnr_db, sqnr_after: after.sqnr_db });
      ctx.setExplorerState(link, { observers: ['torch.MinMaxObserver', 'torch.PerChannelMinMaxObserver'], params: { 'torch.PerChannelMinMaxObserver': { ch_axis: 1 } }, demo: 'activation', formats: [{ id, params }], rotate: parseRotation(ROTATION) });
    });

    ctx.layout({
      text: [
        ...prose(
          'In this activation a few hidden dimensions (columns) carry values far larger than the rest — see their ranges in the chart. One scale per tensor, or per token, must stretch to cover them, and every other value is quantized coarsely.',
          'A rotation mixes the columns: each row x becomes x·H, where H is an orthogonal (Hadamard) matrix of ±1/√n entries, with random signs. It changes no information — the model multiplies the next weight by the same rotation, so the layer computes the same thing — but an outlier spread across all 384 columns becomes 384 ordinary values. QuaRot and SpinQuant rotate activations and weights this way before 4-bit quantization.',
          'Pick a format: the bars compare its error on the activation as it is and rotated.',
        ),
        diagnosis,
      ],
      controls,
      figure,
      task: ctx.tryIt({
        question: ['After the rotation, what SQNR (dB, one decimal) does int4 with one scale for the whole tensor reach on this activation?'],
        placeholder: 'dB',
        check: () => taskAfter !== null && numberCheck(taskAfter, { tolerance: 0.051, unit: ' dB' }),
        hint: () => 'Choose int4 and read the “rotated” bar.',
      }),
      link,
    });
    update();
  },
};
