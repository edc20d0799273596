// Lesson 8: reading a quantized checkpoint. No quantized checkpoint ships with the page, so the
// lesson reads the files it does ship (www/demo) as a checkpoint reader lists them — the engine's
// `inspect` (names, shapes, dtypes, sizes) and tensor summary — and shows, for the format chosen,
// the numbers the compare view reports per weight of a real quantized checkpoint (bits per weight
// and SQNR, `evaluateFormat`); the compare view is linked for the real thing.
import { h, fmtNum, prose, select, canvas, drawHist, integerCheck, DEMO_FILES } from './kit.js';
import { fmtShape } from '../../lib/format.js';

const FILES = [['weight', 'the attention output weight'], ['activation', 'layer 0 output (an activation)'], ['inputs', 'the inputs of that weight']];
const FORMATS = ['ggml.Q4_K', 'ggml.Q8_0', 'bnb.nf4', 'ggml.Q2_K'];
/** The file the "try it" task asks about. */
export const TASK_FILE = 'weight';

/** The bytes of demo file `name`, as `Engine.inspect` takes them. */
async function demoBytes(name) {
  const res = await fetch(DEMO_FILES[name]);
  if (!res.ok) throw new Error(`${DEMO_FILES[name]}: HTTP ${res.status}`);
  return { bytes: new Uint8Array(await res.arrayBuffer()), name: DEMO_FILES[name].split('/').pop() };
}

export const lesson = {
  slug: 'checkpoint',
  title: 'Reading a quantized checkpoint',
  summary: 'what a checkpoint lists, and what a comparison with its original tells you',
  build(ctx) {
    const setting = { file: 'activation', format: 'ggml.Q4_K' };
    let listing = null;
    const listTable = h('table', { class: 'data-table lesson-table' });
    const hist = canvas('Histogram of the chosen tensor');
    const facts = h('dl', { class: 'facts lesson-facts' });
    const figure = ctx.figure('The files listed as a checkpoint reader lists them (the chosen one highlighted), the chosen tensor’s histogram, and what the chosen format does to it.', listTable, hist, facts);
    const link = ctx.explorerLink({});
    const controls = [
      select('file', 'tensor', FILES, setting.file, (v) => {
        setting.file = v;
        update();
      }),
      select('format', 'stored as', FORMATS.map((f) => [f, f]), setting.format, (v) => {
        setting.format = v;
        update();
      }),
    ];

    const update = ctx.updater(async () => {
      if (!listing) {
        const files = [];
        for (const [name] of FILES) files.push(await demoBytes(name));
        listing = await ctx.call('inspect', { files });
      }
      const { summary, hist: counts } = await ctx.useDemo(setting.file);
      const row = await ctx.call('evaluateFormat', { id: setting.format, params: {} }).catch((err) => ({ error: err.message }));
      if (!ctx.live) return;
      const chosen = FILES.findIndex(([name]) => name === setting.file);
      listTable.replaceChildren(
        h('caption', { class: 'visually-hidden', text: 'The tensors of the demo files' }),
        h('thead', {}, h('tr', {}, ...['file', 'shape', 'dtype'].map((t) => h('th', { scope: 'col', text: t })))),
        h('tbody', {}, ...listing.map((file, k) => h('tr', { class: k === chosen ? 'chosen' : null },
          h('td', { text: file.name }), h('td', { text: fmtShape(file.members[0].shape) }), h('td', { text: file.members[0].dtype })))),
      );
      drawHist(hist, counts, {});
      const stored = row.error
        ? [['stored as', `${setting.format}: ${row.error}`]]
        : [['stored as', row.format], ['bits per weight', fmtNum(row.bits_per_value)], ['SQNR against the original', `${fmtNum(row.sqnr_db)} dB`], ['largest error', fmtNum(row.max_abs_err)]];
      facts.replaceChildren(...[...summary.facts.filter((f) => f.label !== 'file').map((f) => [f.label, f.value]), ...stored].map(([k, v]) => h('div', {}, h('dt', { text: k }), h('dd', { text: v }))));
      ctx.drew(figure, { file: setting.file, format: setting.format, elements: summary.elements, bits_per_value: row.bits_per_value ?? null, sqnr_db: row.sqnr_db ?? null });
      const demo = setting.file === 'inputs' ? 'activation' : setting.file;
      ctx.setExplorerState(link, { observers: ['torch.MinMaxObserver'], demo, formats: [{ id: setting.format, params: {} }] });
    });

    ctx.layout({
      text: prose(
        'A checkpoint is a set of named tensors in one or more files (safetensors, GGUF, PyTorch, ONNX). Its header lists each tensor’s name, shape, dtype and where its bytes lie, so a reader can list the whole model without reading the values — the table here is the engine’s listing of the three tensors this page ships.',
        'In a quantized checkpoint the same weight is stored in several pieces: the small integer codes, and their scales (and zero points or minimums), named as the library names them — Q4_K blocks in a GGUF file, qweight / scales / qzeros for GPTQ, weight_packed / weight_scale for compressed-tensors. Reading it means decoding those pieces back to floats, exactly as the library does.',
        'To judge a quantized checkpoint, compare each decoded weight with the original: bits per weight, SQNR (higher is better) and the largest error. The explorer’s compare view does this for every weight of two checkpoints, and also tries plain round-to-nearest in the same format, to tell whether the quantizer did better. Choose a tensor and a format to see those numbers for one tensor.',
      ),
      controls,
      figure,
      task: ctx.tryIt({
        question: ['How many values does the attention output weight hold, from its shape?'],
        placeholder: 'a whole number',
        check: () => listing && integerCheck(listing[FILES.findIndex(([name]) => name === TASK_FILE)].members[0].elements),
        hint: () => `Multiply the numbers of its shape, ${fmtShape(listing[0].members[0].shape)}.`,
      }),
      link,
    });
    update();
  },
};
