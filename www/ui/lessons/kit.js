// What every lesson of the learn view is built from: its shell (text, controls, figure, "try it",
// the link into the explorer), its engine calls (a Web Worker of the learn view's own, so the
// explorer's tensor stays as it is) and the checks of a student's answer. A lesson only arranges
// these: every number it shows is the engine's (written by the engine's `fmtNum`), and an answer
// is compared with the engine's number, never with one computed here.
import { drawHistogram } from '../../pkg/quantscope.js';
import { h, fitCanvas } from '../../lib/panel.js';
import { fmtNum } from '../../lib/format.js';
import { encodeState } from '../state.js';

export { h, fmtNum };

/** The demo tensors lessons open (the explorer's `demo=` names). */
export const DEMO_FILES = {
  activation: 'demo/l0_layer_out.npy',
  weight: 'demo/l0_attn_output_dense_weight.npy',
  inputs: 'demo/l0_attn_dense_in.npy',
};

/** The error-curve setting the explorer opens with (state.js's `curve=`). */
const DEFAULT_CURVE = { bits: 8, scheme: 'affine', metric: 'mse' };

/** An integer code range of `bits` bits: what a framework's `quant_min`/`quant_max` are set to. */
export function codeRange(bits, signed) {
  return signed ? { quant_min: -(2 ** (bits - 1)), quant_max: 2 ** (bits - 1) - 1 } : { quant_min: 0, quant_max: 2 ** bits - 1 };
}

/** The engine's facts `labels` of a tensor summary (`range`, `mean ± std`, …) as one line of text. */
export function factsText(summary, labels) {
  return summary.facts.filter((f) => labels.includes(f.label)).map((f) => `${f.label} ${f.value}`).join(', ');
}

/** `<p>` paragraphs of text; an array inside a paragraph is its children (text and elements). */
export function prose(...paragraphs) {
  return paragraphs.map((p) => h('p', {}, ...(Array.isArray(p) ? p : [p])));
}

/** A labelled `<select>` of `options` ([value, label]) with `data-control=name`. */
export function select(name, label, options, value, onChange) {
  const el = h('select', { 'data-control': name, id: `learn-${name}` }, ...options.map(([v, text]) => h('option', { value: v, text, selected: String(v) === String(value) })));
  el.addEventListener('change', () => onChange(el.value));
  return h('label', { class: 'lesson-control', for: `learn-${name}` }, `${label} `, el);
}

/** A labelled range slider with its value shown, `data-control=name`; `onInput` on every move. */
export function slider(name, label, { min, max, step = 1, value }, onInput, show = (v) => String(v)) {
  const output = h('output', { for: `learn-${name}`, text: show(value) });
  const el = h('input', { type: 'range', id: `learn-${name}`, 'data-control': name, min, max, step, value });
  el.addEventListener('input', () => {
    output.textContent = show(Number(el.value));
    onInput(Number(el.value));
  });
  return h('label', { class: 'lesson-control', for: `learn-${name}` }, `${label} `, el, ' ', output);
}

/** A canvas of the lesson's figure, `label` its accessible name. */
export function canvas(label, cls = 'lesson-canvas') {
  return h('canvas', { class: cls, role: 'img', 'aria-label': label });
}

/** Draw a display histogram (`{lo, hi, counts}`, Engine.select's) with a clipping range and grid, by the engine. */
export function drawHist(el, hist, { clip = null, grid = null, color = 0, logCounts = true, observer = '' } = {}) {
  const ratio = fitCanvas(el);
  drawHistogram(el, hist.lo, hist.hi, hist.counts, { observer, color, clip, grid }, { logCounts, sqnr: false, pixelRatio: ratio });
}

/**
 * A number the student types, accepted within `digits` significant digits of the engine's
 * `value` (half a unit of the last digit asked for), or within `tolerance` when given.
 */
export function numberCheck(value, { digits = 3, tolerance = null, unit = '' } = {}) {
  return (text) => {
    const answer = Number(String(text).replace(/[−–]/g, '-').replace(/,/g, '').trim());
    if (String(text).trim() === '' || !Number.isFinite(answer)) return { ok: false, why: 'Type a number.' };
    const tol = tolerance ?? 0.5 * 10 ** (Math.floor(Math.log10(Math.abs(value) || 1)) - digits + 1);
    if (Math.abs(answer - value) <= tol) return { ok: true, why: `Right: the engine computed ${fmtNum(value)}${unit}.` };
    return { ok: false, why: null };
  };
}

/** An integer the student types, accepted only when it equals the engine's `value`. */
export function integerCheck(value) {
  return (text) => {
    const answer = Number(String(text).replace(/[−–]/g, '-').trim());
    if (String(text).trim() === '' || !Number.isInteger(answer)) return { ok: false, why: 'Type a whole number.' };
    return answer === value ? { ok: true, why: `Right: the engine's answer is ${value}.` } : { ok: false, why: null };
  };
}

/**
 * One lesson on the page: its root element, its engine and its shell. `build` of the lesson
 * module fills it. Every engine call goes through `call`, refused once the lesson is left.
 */
export class LessonContext {
  /**
   * @param {object} host  {engine: () => engine client, use(key, load): make `key` the lesson
   *   engine's tensor, specs: registry entries by id, index: the lesson list}
   * @param {object} lesson the lesson module's `lesson`
   */
  constructor(host, lesson, number) {
    this.host = host;
    this.lesson = lesson;
    this.live = true;
    this.running = 0;
    this.root = h('article', { class: 'lesson card', 'data-lesson': lesson.slug, 'data-state': 'loading', 'aria-labelledby': `lesson-title-${lesson.slug}` });
    this.error = h('div', { class: 'alert', role: 'alert', hidden: true });
    this.number = number;
  }

  /** A call of the lesson engine (`Engine` method `method`). */
  call(method, args = {}) {
    if (!this.live) return Promise.reject(Object.assign(new Error('the lesson was left'), { stale: true }));
    return this.host.engine().call(method, args);
  }

  /** Make the demo tensor `name` the lesson engine's tensor (read once): its `{summary, hist}`. */
  useDemo(name) {
    return this.host.use(`demo:${name}`, async () => {
      const res = await fetch(DEMO_FILES[name]);
      if (!res.ok) throw new Error(`${DEMO_FILES[name]}: HTTP ${res.status}`);
      return [{ bytes: new Uint8Array(await res.arrayBuffer()), name: DEMO_FILES[name].split('/').pop() }];
    }, this);
  }

  /** Make `values` (a few numbers the student typed) the lesson engine's tensor: its `{summary, hist}`. */
  useValues(values) {
    return this.host.use(`values:${JSON.stringify(values)}`, () => [{ data: Float32Array.from(values), shape: [values.length], name: 'your values' }], this);
  }

  /**
   * `fn` made safe to call from every control event: one run at a time; calls made meanwhile
   * collapse into one more run after it. Errors show in the lesson's alert.
   */
  updater(fn) {
    let running = null;
    let again = false;
    const go = () => {
      if (running) {
        again = true;
        return running;
      }
      this.running += 1;
      running = (async () => {
        do {
          again = false;
          try {
            await fn();
            this.showError('');
          } catch (err) {
            if (err.stale || err.restarted) return;
            this.root.dataset.state = 'error';
            this.showError(`The engine could not compute this: ${err.message}`);
          }
        } while (again && this.live);
      })().finally(() => {
        running = null;
        this.running -= 1;
      });
      return running;
    };
    return go;
  }

  showError(message) {
    this.error.textContent = message;
    this.error.hidden = !message;
  }

  /** A figure whose drawing `draw(shows)` records: `data-drawn` counts redraws, `data-shows` what it shows. */
  figure(caption, ...content) {
    const el = h('figure', { class: 'lesson-figure', 'data-drawn': '0' }, ...content, h('figcaption', { class: 'muted' }, caption));
    return el;
  }

  /** Note that `figure` was redrawn showing `shows` (the control's value and the engine's numbers). */
  drew(figure, shows) {
    figure.dataset.drawn = String(Number(figure.dataset.drawn || 0) + 1);
    figure.dataset.shows = JSON.stringify(shows);
    this.root.dataset.state = 'ready';
  }

  /**
   * The "try it" task: `question` (text or nodes), an answer field (`choices`: [value, label]
   * radio buttons; else a text field), and `check()` → a function of the answer giving
   * `{ok, why}` (`why` null: `hint()` says why it is wrong). `check` and `hint` are read when the
   * student answers, so they judge against the engine's numbers of that moment.
   */
  tryIt({ question, choices = null, placeholder = '', check, hint }) {
    const slug = this.lesson.slug;
    const verdict = h('p', { class: 'verdict', role: 'status', 'aria-live': 'polite' });
    const field = choices
      ? h('fieldset', { class: 'choices' }, h('legend', { class: 'visually-hidden', text: 'Your answer' }),
        ...choices.map(([value, label], i) => h('label', {}, h('input', { type: 'radio', name: `answer-${slug}`, value, required: i === 0 }), ' ', label)))
      : h('label', { for: `answer-${slug}` }, 'Your answer ', h('input', { type: 'text', id: `answer-${slug}`, name: 'answer', inputmode: 'decimal', autocomplete: 'off', placeholder }));
    const form = h('form', { class: 'try-it', 'aria-labelledby': `try-${slug}` },
      h('h3', { id: `try-${slug}`, text: 'Try it' }),
      h('p', {}, ...(Array.isArray(question) ? question : [question])),
      h('div', { class: 'answer-row' }, field, h('button', { type: 'submit', class: 'primary', text: 'Check' })),
      verdict);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const data = new FormData(form);
      const answer = choices ? data.get(`answer-${slug}`) ?? '' : data.get('answer');
      const judge = check();
      if (!judge) {
        verdict.textContent = 'The engine has not answered yet; try again in a moment.';
        return;
      }
      const result = judge(answer ?? '');
      form.dataset.verdict = result.ok ? 'right' : 'wrong';
      verdict.textContent = result.ok ? result.why : `Not quite. ${result.why || hint()}`;
    });
    return form;
  }

  /** The link into the explorer in the state `state` describes ({observers, params, curve, demo, formats, rotate}). */
  explorerLink(state, text = 'Open in the explorer') {
    const a = h('a', { class: 'open-explorer button', text });
    this.setExplorerState(a, state);
    return a;
  }

  /** Point explorer link `a` at `state`. */
  setExplorerState(a, state) {
    const full = { observers: [], params: {}, curve: DEFAULT_CURVE, logCounts: true, demo: null, formats: [], ...state };
    a.href = encodeState(full, this.host.specs);
  }

  /**
   * Lay the lesson out: title and navigation, `text` (nodes), `controls`, `figure`, `task`,
   * `link` and whatever `extra` nodes follow the figure.
   */
  layout({ text, controls, figure, extra = [], task, link }) {
    const { index } = this.host;
    const i = index.findIndex((l) => l.slug === this.lesson.slug);
    const prev = index[i - 1];
    const next = index[i + 1];
    this.root.replaceChildren(
      h('nav', { class: 'lesson-nav', 'aria-label': 'Lessons' },
        h('a', { href: '#learn', text: 'All lessons' }),
        h('span', { class: 'muted', text: `Lesson ${i + 1} of ${index.length}` }),
        h('span', { class: 'spacer' }),
        prev ? h('a', { href: `#learn/${prev.slug}`, text: `← ${prev.title}` }) : null,
        next ? h('a', { href: `#learn/${next.slug}`, text: `${next.title} →` }) : null),
      h('h2', { id: `lesson-title-${this.lesson.slug}`, text: this.lesson.title }),
      h('div', { class: 'lesson-body' },
        h('div', { class: 'lesson-text' }, ...text),
        h('div', { class: 'lesson-work' },
          h('div', { class: 'lesson-controls', role: 'group', 'aria-label': 'Controls of the figure' }, ...controls),
          figure,
          ...extra)),
      this.error,
      h('div', { class: 'lesson-end' }, task, h('p', { class: 'explorer-link' }, link, h('span', { class: 'muted', text: ' with this lesson’s settings, and go on with every panel and control of the explorer.' }))),
    );
  }
}

/** A bar of `db` decibels beside a label, its length relative to `top` (drawing only). */
export function dbBar(label, db, top, cls) {
  const width = Math.max(2, Math.min(100, (100 * Math.max(db, 0)) / top));
  return h('div', { class: 'db-row' },
    h('span', { class: 'db-label', text: label }),
    h('span', { class: 'db-track' }, h('span', { class: `db-bar ${cls}`, style: { width: `${width}%` } })),
    h('span', { class: 'db-value', text: `${fmtNum(db)} dB` }));
}
