// Lesson 2: one scale for the whole MiniLM weight against one scale per output channel, at the
// bits the student picks: both of PyTorch's MinMax observers (symmetric), their SQNR, and the
// per-channel ranges drawn by the engine's channel chart (outlier channels labelled).
import { drawChannels } from '../../pkg/quantscope.js';
import { fitCanvas } from '../../lib/panel.js';
import { h, dbBar, fmtNum, prose, slider, canvas, codeRange, numberCheck, factsText } from './kit.js';

const PER_TENSOR = 'torch.MinMaxObserver';
const PER_CHANNEL = 'torch.PerChannelMinMaxObserver';

/** Symmetric signed codes of `bits` bits, per tensor or per channel (axis 0, output channels). */
export function perChannelParams(bits) {
  return {
    [PER_TENSOR]: { qscheme: 'per_tensor_symmetric', dtype: 'qint8', ...codeRange(bits, true) },
    [PER_CHANNEL]: { qscheme: 'per_channel_symmetric', dtype: 'qint8', ...codeRange(bits, true) },
  };
}

export const lesson = {
  slug: 'per-channel',
  title: 'Per tensor or per channel',
  summary: 'one scale for a whole weight, or one per output channel',
  build(ctx) {
    const setting = { bits: 4 };
    let shown = null;
    const bars = h('div', { class: 'db-bars', 'aria-label': 'SQNR per tensor and per channel' });
    const channels = canvas('Range of every output channel of the weight; the widest are labelled', 'lesson-canvas channels');
    const figure = ctx.figure('Top: signal-to-quantization-noise ratio (higher is better) with one scale for the tensor and one per channel. Bottom: the range of each of the 384 output channels; one scale per tensor must cover the widest.', bars, channels);
    const link = ctx.explorerLink({});
    const facts = h('span', { text: '…' });
    const controls = [slider('bits', 'bits', { min: 2, max: 8, value: setting.bits }, (v) => {
      setting.bits = v;
      update();
    })];

    const update = ctx.updater(async () => {
      const { bits } = setting;
      const { summary } = await ctx.useDemo('weight');
      facts.textContent = factsText(summary, ['shape', 'range', 'mean ± std']);
      const params = perChannelParams(bits);
      const [tensor, channel] = await Promise.all([PER_TENSOR, PER_CHANNEL].map((id) => ctx.call('observe', { id, params: params[id], view: true })));
      if (!ctx.live) return;
      const top = Math.max(tensor.metrics.sqnr_db, channel.metrics.sqnr_db, 1);
      bars.replaceChildren(dbBar('per tensor', tensor.metrics.sqnr_db, top, 'tensor'), dbBar('per channel', channel.metrics.sqnr_db, top, 'channel'));
      const ratio = fitCanvas(channels);
      drawChannels(channels, channel.view.channels, 1, { logCounts: false, sqnr: false, pixelRatio: ratio });
      shown = { bits, tensor: tensor.metrics.sqnr_db, channel: channel.metrics.sqnr_db };
      ctx.drew(figure, { bits, sqnr_per_tensor: shown.tensor, sqnr_per_channel: shown.channel });
      ctx.setExplorerState(link, { observers: [PER_TENSOR, PER_CHANNEL], params, demo: 'weight' });
    });

    ctx.layout({
      text: prose(
        ['This weight matrix of the MiniLM encoder has one row per output channel (', facts, '). Most of its values are small, but a few channels reach much further than the standard deviation.'],
        'With one scale for the whole tensor, the grid must stretch to the widest channel, so the ordinary channels only use a few of its steps. With one scale per channel, every row gets a grid fitted to its own range — at the cost of storing 384 scales instead of one.',
        'SQNR measures how loud the signal is against the quantization noise, in decibels: every 6 dB more means about half the error. Move the bits and compare the two bars.',
      ),
      controls,
      figure,
      task: ctx.tryIt({
        question: ['At the bits chosen above, what SQNR (in dB, one decimal) does the per-channel scale reach on this weight?'],
        placeholder: 'dB',
        check: () => shown && numberCheck(shown.channel, { tolerance: 0.051, unit: ' dB' }),
        hint: () => `Read the per-channel bar at ${shown.bits} bits: the per-tensor scale gives ${fmtNum(shown.tensor)} dB, the per-channel one more.`,
      }),
      link,
    });
    update();
  },
};
