// The shareable part of the page's state, kept in the URL fragment:
//   #o=torch.MinMaxObserver,torch.HistogramObserver   selected observers, in order
//   &torch.HistogramObserver:bins=1024                a parameter that differs from its default
//                                                     (text, vector and float-format bits values
//                                                     as JSON, e.g. modelopt…:num_bits=[4,3])
//   &curve=8,affine,mse  &log=1 (log counts; 0 = linear)  &demo=weight
//   &formats=[{"id":"int","params":{"bits":3}}]        formats added to the formats view
//   &rotate=hadamard:7                                 the rotation preview, on with seed 7
//                                                     (absent: off; www/ui/rotation.js)
import { encodeParam, parseParam } from './controls.js';
import { parseRotation } from './rotation.js';

/**
 * Encode `state` ({observers, params, curve, logCounts, demo, formats, rotate}) as a URL fragment;
 * `specs` (id → registry entry) gives each parameter's kind.
 */
export function encodeState(state, specs) {
  const q = new URLSearchParams();
  q.set('o', state.observers.join(','));
  for (const id of state.observers) {
    const params = state.params[id] || {};
    const spec = specs.get(id);
    for (const [k, v] of Object.entries(params)) {
      q.append(`${id}:${k}`, encodeParam(spec && spec.params.find((x) => x.name === k), v));
    }
  }
  const c = state.curve;
  q.set('curve', `${c.bits},${c.scheme},${c.metric}`);
  q.set('log', state.logCounts ? '1' : '0');
  if (state.demo) q.set('demo', state.demo);
  if (state.formats && state.formats.length) q.set('formats', JSON.stringify(state.formats));
  if (state.rotate) q.set('rotate', state.rotate);
  return `#${q.toString()}`;
}

/**
 * Decode a fragment against the registry (`specs`: id → spec). Unknown observers and
 * parameters are dropped; values are parsed by their ParamSpec. Returns null for an empty
 * fragment.
 */
export function decodeState(hash, specs) {
  const text = (hash || '').replace(/^#/, '');
  if (!text) return null;
  const q = new URLSearchParams(text);
  const state = { observers: [], params: {}, curve: null, logCounts: q.get('log') !== '0', demo: q.get('demo'), rotate: parseRotation(q.get('rotate')) };
  if (q.has('o')) {
    state.observers = q
      .get('o')
      .split(',')
      .filter((id) => id && specs.has(id));
    state.observers = [...new Set(state.observers)];
  }
  for (const [key, value] of q.entries()) {
    const i = key.lastIndexOf(':');
    if (i <= 0) continue;
    const id = key.slice(0, i);
    const name = key.slice(i + 1);
    const spec = specs.get(id);
    const p = spec && spec.params.find((x) => x.name === name);
    if (!p) continue;
    const v = parseParam(p, value);
    if (v === undefined) continue;
    (state.params[id] ||= {})[name] = v;
  }
  state.formats = decodeFormats(q.get('formats'));
  const curve = (q.get('curve') || '').split(',');
  if (curve.length === 3) {
    const bits = Math.min(16, Math.max(2, Math.round(Number(curve[0])) || 8));
    state.curve = {
      bits,
      scheme: curve[1] === 'symmetric' ? 'symmetric' : 'affine',
      metric: curve[2] === 'sqnr' ? 'sqnr' : 'mse',
    };
  }
  return state;
}

/** Added formats from the URL: a JSON list of {id, params}; anything else is ignored. */
function decodeFormats(text) {
  if (!text) return [];
  try {
    const list = JSON.parse(text);
    if (!Array.isArray(list)) return [];
    return list
      .filter((e) => e && typeof e.id === 'string' && e.params && typeof e.params === 'object' && !Array.isArray(e.params))
      .slice(0, 32)
      .map((e) => ({ id: e.id, params: { ...e.params } }));
  } catch {
    return [];
  }
}
