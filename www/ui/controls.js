// Parameter controls generated from the registry's ParamSpecs — no per-observer code. One
// control per ParamKind:
//   int, float  <input type="range"> (logarithmic for log-scale floats and for positive integer
//               ranges spanning three decades or more, signed-logarithmic for huge integer ranges
//               such as quant_min) with an exact number box; integers stay integers
//   bool        checkbox
//   choice      select
//   bits        select offering min..max and the float formats, e.g. `E4M3 (4, 3)` → [4, 3]
//   text        text box
//   vector      select among the loaded tensors ({file, member}) and the vectors opened from a
//               file (inline values), with an "open…" button; "none" = null
// A parameter whose framework default is null (the framework decides) may be left "auto": an
// "auto" entry first in a choice's select, an empty text box, an "auto" checkbox beside a
// slider or a bits select. Every control has a visible <label> naming the parameter and showing
// its value. `encodeParam`/`parseParam` carry every kind through the URL.
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

const symlog = (x) => Math.sign(x) * Math.log2(1 + Math.abs(x));
const symexp = (y) => Math.sign(y) * (2 ** Math.abs(y) - 1);

function toSlider(p, scale, v) {
  const { min, max } = p;
  if (v === null || v === undefined || Number.isNaN(v)) return 0;
  if (scale === 'log') return Math.round(((Math.log(v) - Math.log(min)) / (Math.log(max) - Math.log(min))) * SLIDER_STEPS);
  if (scale === 'symlog') return Math.round(((symlog(v) - symlog(min)) / (symlog(max) - symlog(min))) * SLIDER_STEPS);
  if (p.type === 'int') return v;
  return Math.round(((v - min) / (max - min)) * SLIDER_STEPS);
}

function fromSlider(p, scale, s) {
  const { min, max } = p;
  const t = Number(s) / SLIDER_STEPS;
  let v;
  if (scale === 'log') v = Math.exp(Math.log(min) + t * (Math.log(max) - Math.log(min)));
  else if (scale === 'symlog') v = symexp(symlog(min) + t * (symlog(max) - symlog(min)));
  else if (p.type === 'int') v = Number(s);
  else v = min + t * (max - min);
  if (p.type === 'int') return Math.min(max, Math.max(min, Math.round(v)));
  return Math.min(max, Math.max(min, Number(v.toPrecision(4))));
}

/** `[e, m]` as the bits select labels it. */
const floatFormat = ([e, m]) => `E${e}M${m} (${e}, ${m})`;

/** The option value of a bits value (`8`, `4,3`) and back. */
const bitsKey = (v) => (Array.isArray(v) ? v.join(',') : String(v));
function bitsValue(p, key) {
  const parts = String(key).split(',').map((x) => Number(x.trim()));
  if (parts.some((x) => !Number.isInteger(x))) return undefined;
  if (parts.length === 1) return parts[0] >= p.min && parts[0] <= p.max ? parts[0] : undefined;
  if (parts.length === 2 && p.formats.some(([e, m]) => e === parts[0] && m === parts[1])) return parts;
  return undefined;
}

/** A 32-bit FNV-1a hash of `text`, in base 36. */
function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(36);
}

/** A vector value's option value: "" = none, a loaded tensor by reference, inline values by hash. */
const vectorKey = (v) => {
  if (Array.isArray(v)) return `inline:${v.length}:${hash(JSON.stringify(v))}`;
  return v && typeof v === 'object' ? JSON.stringify({ file: v.file, member: v.member }) : '';
};

/** Whether the control of `p` leaves null ("auto") to an entry of its own rather than a checkbox. */
const autoInline = (p) => p.default === null && (p.type === 'choice' || p.type === 'text' || p.type === 'vector');

/** A value as the control's label shows it. */
function show(p, v, tensors = []) {
  if (v === null || v === undefined) return p.type === 'vector' ? 'none' : 'auto';
  if (p.type === 'bits' && Array.isArray(v)) return floatFormat(v);
  if (p.type === 'vector') {
    const t = tensors.find((x) => vectorKey(x.value) === vectorKey(v));
    if (t) return t.label;
    return Array.isArray(v) ? `${v.length} values` : `${v.member || ''} (file ${v.file})`;
  }
  if (typeof v === 'number') return String(Number.isInteger(v) ? v : Number(v.toPrecision(6)));
  return String(v);
}

/** A select of `options` ([value, text]) with `key` selected. */
function selectOf(id, options, key) {
  return h('select', { id }, ...options.map(([value, text]) => h('option', { value, text, selected: value === key })));
}

/**
 * The input elements of one parameter and how to read, write and enable them. `emit(value,
 * final)` is called as the user moves them (`final` once a move ends).
 */
function inputsFor(p, current, id, emit, tensors, openVector) {
  if (p.type === 'bool') {
    const cb = h('input', { type: 'checkbox', id, checked: Boolean(current) });
    cb.addEventListener('change', () => emit(cb.checked, true));
    return { nodes: [cb], read: () => cb.checked, setEnabled: (on) => (cb.disabled = !on), grouped: false };
  }
  if (p.type === 'choice' || p.type === 'bits' || p.type === 'vector') {
    let options;
    let parse;
    if (p.type === 'choice') {
      options = p.options.map((o) => [o, o]);
      if (autoInline(p)) options.unshift(['', 'auto']);
      parse = (key) => (key === '' && autoInline(p) ? null : key);
    } else if (p.type === 'bits') {
      options = [];
      for (let b = p.min; b <= p.max; b++) options.push([String(b), String(b)]);
      for (const f of p.formats) options.push([bitsKey(f), floatFormat(f)]);
      parse = (key) => bitsValue(p, key);
    } else {
      // Loaded tensors by reference, opened vectors (and one from the URL) inline.
      const values = new Map([['', null]]);
      options = [['', 'none']];
      const offer = (value, label) => {
        const k = vectorKey(value);
        if (values.has(k)) return k;
        values.set(k, value);
        options.push([k, label]);
        return k;
      };
      for (const t of tensors) offer(t.value, t.label);
      if (current !== null && current !== undefined) offer(current, show(p, current, tensors));
      parse = (key) => (values.has(key) ? values.get(key) : null);
      if (openVector) {
        const sel = selectOf(id, options, vectorKey(current));
        sel.addEventListener('change', () => emit(parse(sel.value), true));
        const file = h('input', { type: 'file', id: `${id}-file`, accept: '.npy,.npz,.safetensors', class: 'visually-hidden' });
        const open = h('label', { class: 'button open-vector', for: `${id}-file`, title: `open a .npy, .npz or .safetensors file as ${p.name}`, text: 'open…' });
        const alert = h('span', { class: 'alert inline', role: 'alert', hidden: true });
        file.addEventListener('change', async () => {
          const chosen = file.files[0];
          file.value = '';
          if (!chosen) return;
          alert.hidden = true;
          let opened;
          try {
            opened = await openVector(chosen);
          } catch (err) {
            alert.textContent = `Cannot use ${chosen.name} as ${p.name}: ${err.message}`;
            alert.hidden = false;
            return;
          }
          if (!opened) return;
          const k = offer(opened.value, opened.label);
          if (!sel.querySelector(`option[value="${CSS.escape(k)}"]`)) sel.append(h('option', { value: k, text: opened.label }));
          sel.value = k;
          emit(opened.value, true);
        });
        return { nodes: [sel, open, file, alert], read: () => parse(sel.value), setEnabled: (on) => (sel.disabled = !on), grouped: true };
      }
    }
    const key = p.type === 'bits' ? bitsKey(current ?? p.default ?? Math.min(p.max, Math.max(p.min, 8))) : p.type === 'vector' ? vectorKey(current) : current ?? '';
    const sel = selectOf(id, options, key);
    sel.addEventListener('change', () => emit(parse(sel.value), true));
    return { nodes: [sel], read: () => parse(sel.value), setEnabled: (on) => (sel.disabled = !on), grouped: false };
  }
  if (p.type === 'text') {
    const auto = autoInline(p);
    const box = h('input', { type: 'text', id, value: current ?? '', placeholder: auto ? 'auto' : '', 'aria-label': `${p.name} (text${auto ? '; empty = auto' : ''})` });
    const read = () => (auto && box.value.trim() === '' ? null : box.value);
    box.addEventListener('change', () => emit(read(), true));
    return { nodes: [box], read, setEnabled: (on) => (box.disabled = !on), grouped: true };
  }
  const scale = scaleFor(p);
  const linearInt = scale === 'linear' && p.type === 'int';
  const slider = h('input', {
    type: 'range',
    id,
    min: linearInt ? p.min : 0,
    max: linearInt ? p.max : SLIDER_STEPS,
    step: 1,
    value: toSlider(p, scale, current ?? (p.type === 'int' ? Math.max(p.min, Math.min(p.max, 0)) : p.min)),
    'aria-valuetext': show(p, current),
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
  slider.addEventListener('input', () => {
    const v = fromSlider(p, scale, slider.value);
    exact.value = v;
    slider.setAttribute('aria-valuetext', show(p, v));
    emit(v, false);
  });
  slider.addEventListener('change', () => emit(fromSlider(p, scale, slider.value), true));
  const typed = () => {
    if (exact.value === '') return undefined;
    const v = Number(exact.value);
    if (!Number.isFinite(v)) return undefined;
    return p.type === 'int' ? Math.round(v) : v;
  };
  exact.addEventListener('change', () => {
    const v = typed();
    if (v === undefined) return;
    exact.value = v;
    slider.value = toSlider(p, scale, Math.min(p.max, Math.max(p.min, v)));
    emit(v, true);
  });
  const read = () => {
    const v = typed() ?? fromSlider(p, scale, slider.value);
    exact.value = v;
    return v;
  };
  const setEnabled = (on) => {
    slider.disabled = !on;
    exact.disabled = !on;
  };
  return { nodes: [slider, exact], read, setEnabled, grouped: true };
}

/**
 * The loaded tensors a vector parameter may take, from the loaded files' infos (`{index, name,
 * members}`): [{value: {file, member}, label}].
 */
export function tensorChoices(files = []) {
  const out = [];
  for (const f of files) {
    for (const m of f.members) {
      const name = m.name ? `${f.name}: ${m.name}` : f.name;
      out.push({ value: { file: f.index, member: m.name }, label: `${name} [${m.shape.join(', ')}]` });
    }
  }
  return out;
}

/**
 * Controls for `spec`'s parameters inside a <div class="controls">.
 * @param spec registry entry {id, params: ParamSpec[]}
 * @param values current values (missing key = default)
 * @param onChange (name, value, {final}) called as the user moves a control (value null = auto)
 * @param options `affects: false` hides the search/data tag (quantizer parameters); `idPrefix`
 *   makes the input ids unique on a page showing several explorers; `tensors` lists the loaded
 *   tensors a vector parameter may take: [{value: {file, member} or inline values, label}];
 *   `openVector(file)` (optional) reads a vector from a File the user opens and resolves to
 *   {value: number[], label} (or null), offered by an "open…" button beside the select
 */
export function buildControls(spec, values, onChange, { affects = true, idPrefix = '', tensors = [], openVector = null } = {}) {
  const box = h('div', { class: 'controls' });
  const safeId = spec.id.replace(/[^A-Za-z0-9_-]/g, '_');
  for (const p of spec.params) {
    const inputId = `${idPrefix}p-${safeId}-${p.name}`;
    const current = Object.prototype.hasOwnProperty.call(values, p.name) ? values[p.name] : p.default;
    const out = h('output', { class: 'value', for: inputId, text: show(p, current, tensors) });
    const label = h('label', { for: inputId, title: p.doc }, h('span', { class: 'pname', text: p.name }), ' = ', out);
    const tag = h('span', {
      class: `affects affects-${p.affects}`,
      title: p.affects === 'search' ? 'changes only the range search: applied without a pass over the data' : 'the observer sees the data again',
      text: p.affects === 'search' ? 'search' : 'data',
    });
    const row = h('div', { class: 'control', 'data-param': p.name, 'data-kind': p.type, 'data-affects': p.affects }, label, affects ? tag : null);
    const emit = (v, final) => {
      out.textContent = show(p, v, tensors);
      onChange(p.name, v, { final });
    };
    const control = inputsFor(p, current, inputId, emit, tensors, openVector);
    if (p.default === null && !autoInline(p)) {
      const auto = h('input', { type: 'checkbox', class: 'auto', 'aria-label': `${p.name}: automatic`, checked: current === null || current === undefined });
      auto.addEventListener('change', () => {
        control.setEnabled(!auto.checked);
        emit(auto.checked ? null : control.read(), true);
      });
      control.setEnabled(!auto.checked);
      row.append(h('div', { class: 'inputs' }, h('label', { class: 'auto-label' }, auto, ' auto'), ...control.nodes));
    } else if (control.grouped) {
      row.append(h('div', { class: 'inputs' }, ...control.nodes));
    } else {
      row.append(...control.nodes);
    }
    box.append(row);
  }
  return box;
}

/** A parameter value as the URL carries it ("null" for null; JSON for text, bits formats and vectors). */
export function encodeParam(p, v) {
  if (v === null || v === undefined) return 'null';
  if (p && (p.type === 'text' || p.type === 'vector' || (p.type === 'bits' && Array.isArray(v)))) return JSON.stringify(v);
  return String(v);
}

/** Parse a URL-encoded parameter value by its spec ("auto"/"null" → null; undefined when invalid). */
export function parseParam(p, text) {
  if (text === 'null' || text === 'auto') return null;
  const json = () => {
    try {
      return JSON.parse(text);
    } catch {
      return undefined;
    }
  };
  switch (p.type) {
    case 'bool':
      return text === 'true' || text === '1';
    case 'int': {
      const v = Number(text);
      return Number.isFinite(v) ? Math.round(v) : undefined;
    }
    case 'float': {
      const v = Number(text);
      return Number.isFinite(v) ? v : undefined;
    }
    case 'bits': {
      const v = text.startsWith('[') ? json() : Number(text);
      return v === undefined ? undefined : bitsValue(p, bitsKey(v));
    }
    case 'text': {
      const v = json();
      return typeof v === 'string' ? v : undefined;
    }
    case 'vector': {
      const v = json();
      if (Array.isArray(v) && v.every((x) => typeof x === 'number' && Number.isFinite(x))) return v;
      if (v && typeof v === 'object' && Number.isInteger(v.file) && typeof v.member === 'string') return { file: v.file, member: v.member };
      return undefined;
    }
    default:
      return p.options && p.options.includes(text) ? text : undefined;
  }
}
