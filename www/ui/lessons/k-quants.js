// Lesson 6: the formats LLMs ship in — llama.cpp's k-quants (super-blocks of 256 values, blocks of
// 16 or 32 with their own scales and minimums stored in a few bits) and the importance matrix,
// on the MiniLM weight, through the engine's ggml codecs (`evaluateFormat`), bit for bit as
// `llama-quantize` writes them.
import { drawFormats } from '../../pkg/quantscope.js';
import { fitCanvas } from '../../lib/panel.js';
import { h, fmtNum, prose, select, canvas } from './kit.js';

/** The ggml types of the lesson, cheapest first. */
export const TYPES = ['ggml.Q2_K', 'ggml.Q3_K', 'ggml.Q4_K', 'ggml.Q5_K', 'ggml.Q6_K', 'ggml.Q8_0'];
/** The SQNR the "try it" task asks for. */
export const TARGET_DB = 30;
/** Columns of the demo weight (its last axis): one importance each. */
const COLUMNS = 384;

/**
 * The parameters of a ggml type with or without an importance matrix. The lesson's importance is
 * uniform (every column alike): it switches llama.cpp to its imatrix search without favouring a
 * column; a real one comes from `llama-imatrix` on the model's activations.
 */
export function typeParams(uniformImportance) {
  return uniformImportance ? { imatrix: new Array(COLUMNS).fill(1) } : {};
}

export const lesson = {
  slug: 'k-quants',
  title: 'The formats LLMs ship in: k-quants and the importance matrix',
  summary: 'llama.cpp’s Q2_K … Q8_0 and what an imatrix changes',
  build(ctx) {
    const setting = { type: 'ggml.Q4_K', imatrix: false };
    let rows = null;
    let plain = null;
    const chart = canvas('SQNR against bits per weight of the k-quants, your choice highlighted', 'lesson-canvas formats');
    const table = h('table', { class: 'data-table lesson-table' });
    const figure = ctx.figure('Every k-quant on this weight: bits per weight (every stored scale and minimum counted) against SQNR. The type you chose is highlighted.', chart, table);
    const imatrixBox = h('input', { type: 'checkbox', id: 'learn-imatrix', 'data-control': 'imatrix' });
    imatrixBox.addEventListener('change', () => {
      setting.imatrix = imatrixBox.checked;
      update();
    });
    const controls = [
      select('type', 'type', TYPES.map((t) => [t, t.replace('ggml.', '')]), setting.type, (v) => {
        setting.type = v;
        update();
      }),
      h('label', { class: 'lesson-control', for: 'learn-imatrix' }, imatrixBox, ' quantize with an importance matrix (uniform: every column alike)'),
    ];
    const link = ctx.explorerLink({});

    const update = ctx.updater(async () => {
      await ctx.useDemo('weight');
      if (!plain) {
        const got = [];
        for (const id of TYPES) got.push(await ctx.call('evaluateFormat', { id, params: {} }));
        plain = got;
      }
      const params = typeParams(setting.imatrix);
      const row = setting.imatrix ? await ctx.call('evaluateFormat', { id: setting.type, params }) : plain[TYPES.indexOf(setting.type)];
      if (!ctx.live) return;
      rows = plain;
      const points = [...plain, ...(setting.imatrix ? [row] : [])].map((r) => ({ label: r.format, kind: r.id, bits_per_value: r.bits_per_value, sqnr_db: r.sqnr_db, highlighted: r === row }));
      drawFormats(chart, { points }, { pixelRatio: fitCanvas(chart) });
      table.replaceChildren(
        h('caption', { class: 'visually-hidden', text: 'Bits per weight and SQNR of every k-quant' }),
        h('thead', {}, h('tr', {}, ...['type', 'bits / weight', 'SQNR'].map((t, k) => h('th', { scope: 'col', class: k ? 'num' : null, text: t })))),
        h('tbody', {}, ...[...plain, ...(setting.imatrix ? [row] : [])].map((r) => h('tr', { class: r === row ? 'chosen' : null },
          h('td', { text: r.format }), h('td', { class: 'num', text: fmtNum(r.bits_per_value) }), h('td', { class: 'num', text: `${fmtNum(r.sqnr_db)} dB` })))),
      );
      ctx.drew(figure, { type: setting.type, imatrix: setting.imatrix, format: row.format, bits_per_value: row.bits_per_value, sqnr_db: row.sqnr_db });
      ctx.setExplorerState(link, { observers: ['torch.MinMaxObserver'], demo: 'weight', formats: [{ id: setting.type, params: {} }] });
    });

    ctx.layout({
      text: prose(
        'Models for laptops and phones are shipped in llama.cpp’s GGUF files, mostly as k-quants. A k-quant cuts each row into super-blocks of 256 weights, and those into blocks of 16 or 32. Every block has its own scale (and, in some types, a minimum), and those scales are themselves stored as small integers with one float16 scale per super-block. That is why Q4_K costs only a little more than 4 bits per weight (the table gives the engine’s count), not 4 plus a full float for every block.',
        'Q2_K … Q6_K trade size for accuracy. The importance matrix (imatrix) tells the quantizer which columns matter most — measured by llama-imatrix from the activations that meet this weight — and the quantizer then searches each block’s scale to protect those columns. Tick the box to quantize through that search with every column equally important: even without favouring any column, the search itself changes the result.',
        'Pick a type and compare its cost and its error with the others.',
      ),
      controls,
      figure,
      task: ctx.tryIt({
        question: [`Without an importance matrix, which is the cheapest k-quant that reaches at least ${TARGET_DB} dB on this weight?`],
        choices: TYPES.map((t) => [t, t.replace('ggml.', '')]),
        check: () => rows && ((answer) => {
          const good = rows.filter((r) => r.sqnr_db >= TARGET_DB).sort((a, b) => a.bits_per_value - b.bits_per_value)[0];
          if (!answer) return { ok: false, why: 'Pick one of the types.' };
          return answer === good.id ? { ok: true, why: `Right: ${good.format} reaches ${fmtNum(good.sqnr_db)} dB at ${fmtNum(good.bits_per_value)} bits per weight.` } : { ok: false, why: null };
        }),
        hint: () => `Look down the table for the first type whose SQNR is ${TARGET_DB} dB or more: the cheaper ones fall short, the dearer ones cost more bits.`,
      }),
      link,
    });
    update();
  },
};
