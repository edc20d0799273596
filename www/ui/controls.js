// Parameter controls generated from the registry's ParamSpecs — no per-observer code.
// int/float → <input type="range"> (logarithmic for log-scale floats and for positive integer
// ranges spanning three decades or more, signed-logarithmic for huge integer ranges such as
// quant_min) with an exact number box; bool → checkbox; choice → select. Parameters whose
// framework default is null get an "auto" checkbox (null = the framework decides). Every control
// has a visible <label> naming the parameter and showing its current value.
import { h } from '../lib/panel.js';

const SLIDER_STEPS = 1000;

/** How a numeric slider position maps to a value. */
function scaleFor(p) {
  const { min, max } = p;
  if (p.type === 'float' && p.log && min > 0) return 'log';
  if (p.type === 'int' && min >= 1 && max / min >= 1000) return 'log';
  if (p.type === 'int' && max - min > 100000) return 'symlog';
  return 'linear';
}

function toSlider(p, scale, v) {
  const { min, max } = p;
  if (v === null || v === undefined || Number.isNaN(v)) return 0;
  if (scale === 'log') return Math.round(((Math.log(v) - Math.log(min)) / (Math.log(max) - Math.log(min))) * SLIDER_STEPS);
  if (scale === 'symlog') {
    const f = (x) => Math.sign(x) * Math.log2(1 + Math.abs(x));
    return Math.round(((f(v) - f(min)) / (f(max) - f(min))) * SLIDER_STEPS);
  }
  if (p.type === 'int') return v;
  return Math.round(((v - min) / (max - min)) * SLIDER_STEPS);
}

function fromSlider(p, scale, s) {
  const { min, max } = p;
  let v;
  const t = Number(s) / SLIDER_STEPS;
  if (scale === 'log') v = Math.exp(Math.log(min) + t * (Math.log(max) - Math.log(min)));
  else if (scale === 'symlog') {
    const f = (x) => Math.sign(x) * Math.log2(1 + Math.abs(x));
    const g = (y) => Math.sign(y) * (2 ** Math.abs(y) - 1);
    v = g(f(min) + t * (f(max) - f(min)));
  } else if (p.type === 'int') v = Number(s);
  else v = min + t * (max - min);
  if (p.type === 'int') return Math.min(max, Math.max(min, Math.round(v)));
  return Math.min(max, Math.max(min, Number(v.toPrecision(4))));
}

function show(v) {
  if (v === null || v === undefined) return 'auto';
  if (typeof v === 'number') return String(Number.isInteger(v) ? v : Number(v.toPrecision(6)));
  return String(v);
}

/**
 * Controls for `spec`'s parameters inside a <div class="controls">.
 * @param spec registry entry {id, params: ParamSpec[]}
 * @param values current values (missing key = default)
 * @param onChange (name, value, {final}) called as the user moves a control (value null = auto)
 * @param options `affects: false` hides the search/data tag (quantizer parameters)
 */
export function buildControls(spec, values, onChange, { affects = true } = {}) {
  const box = h('div', { class: 'controls' });
  const safeId = spec.id.replace(/[^A-Za-z0-9_-]/g, '_');
  for (const p of spec.params) {
    if (p.type === 'vector') continue; // vectors (ggml's imatrix) come from a tensor, not a control
    const inputId = `p-${safeId}-${p.name}`;
    const current = Object.prototype.hasOwnProperty.call(values, p.name) ? values[p.name] : p.default;
    const out = h('output', { class: 'value', for: inputId, text: show(current) });
    const label = h('label', { for: inputId, title: p.doc }, h('span', { class: 'pname', text: p.name }), ' = ', out);
    const tag = h('span', {
      class: `affects affects-${p.affects}`,
      title: p.affects === 'search' ? 'changes only the range search: applied without a pass over the data' : 'the observer sees the data again',
      text: p.affects === 'search' ? 'search' : 'data',
    });
    const row = h('div', { class: 'control', 'data-param': p.name, 'data-affects': p.affects }, label, affects ? tag : null);
    const emit = (v, final) => {
      out.textContent = show(v);
      onChange(p.name, v, { final });
    };
    if (p.type === 'bool') {
      const cb = h('input', { type: 'checkbox', id: inputId, checked: Boolean(current) });
      cb.addEventListener('change', () => emit(cb.checked, true));
      row.append(cb);
    } else if (p.type === 'choice') {
      const sel = h('select', { id: inputId }, ...p.options.map((o) => h('option', { value: o, text: o, selected: o === current })));
      sel.addEventListener('change', () => emit(sel.value, true));
      row.append(sel);
    } else {
      const scale = scaleFor(p);
      const sliderMin = scale === 'linear' && p.type === 'int' ? p.min : 0;
      const sliderMax = scale === 'linear' && p.type === 'int' ? p.max : SLIDER_STEPS;
      const slider = h('input', {
        type: 'range',
        id: inputId,
        min: sliderMin,
        max: sliderMax,
        step: 1,
        value: toSlider(p, scale, current ?? (p.type === 'int' ? Math.max(p.min, Math.min(p.max, 0)) : p.min)),
        'aria-valuetext': show(current),
      });
      const exact = h('input', {
        type: 'number',
        class: 'exact',
        'aria-label': `${p.name} (exact value)`,
        min: p.min,
        max: p.max,
        step: p.type === 'int' ? 1 : 'any',
        value: current ?? '',
      });
      let auto = null;
      const setEnabled = (on) => {
        slider.disabled = !on;
        exact.disabled = !on;
      };
      slider.addEventListener('input', () => {
        const v = fromSlider(p, scale, slider.value);
        exact.value = v;
        slider.setAttribute('aria-valuetext', show(v));
        emit(v, false);
      });
      slider.addEventListener('change', () => emit(fromSlider(p, scale, slider.value), true));
      exact.addEventListener('change', () => {
        if (exact.value === '') return;
        let v = Number(exact.value);
        if (!Number.isFinite(v)) return;
        if (p.type === 'int') v = Math.round(v);
        slider.value = toSlider(p, scale, Math.min(p.max, Math.max(p.min, v)));
        emit(v, true);
      });
      if (p.default === null) {
        auto = h('input', { type: 'checkbox', class: 'auto', 'aria-label': `${p.name}: automatic`, checked: current === null || current === undefined });
        const autoLabel = h('label', { class: 'auto-label' }, auto, ' auto');
        auto.addEventListener('change', () => {
          setEnabled(!auto.checked);
          if (auto.checked) emit(null, true);
          else {
            const v = exact.value === '' ? fromSlider(p, scale, slider.value) : Number(exact.value);
            exact.value = v;
            emit(v, true);
          }
        });
        setEnabled(!auto.checked);
        row.append(h('div', { class: 'inputs' }, autoLabel, slider, exact));
      } else {
        row.append(h('div', { class: 'inputs' }, slider, exact));
      }
    }
    box.append(row);
  }
  return box;
}

/** Parse a URL-encoded parameter value by its spec ("auto"/"null" → null). */
export function parseParam(p, text) {
  if (text === 'null' || text === 'auto') return null;
  if (p.type === 'bool') return text === 'true' || text === '1';
  if (p.type === 'int') {
    const v = Number(text);
    return Number.isFinite(v) ? Math.round(v) : undefined;
  }
  if (p.type === 'float') {
    const v = Number(text);
    return Number.isFinite(v) ? v : undefined;
  }
  return p.options && p.options.includes(text) ? text : undefined;
}
