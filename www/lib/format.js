// Number formatting for the page, the notebook widget and the npm package. Numbers are written
// by the engine's one formatter (quantscope::plot::fmt_num, which panels, tables and charts use
// too), so the page cannot write a number differently from an exported panel; the WebAssembly
// module must be initialised first. Digit grouping, byte sizes and shapes are written only here.
import { fmtNum as engineFmtNum } from '../pkg/quantscope.js';

/** About four significant digits, exponent form when very large or small, a real minus sign; "—" for none. */
export function fmtNum(v) {
  if (v === null || v === undefined) return '—';
  return engineFmtNum(Number(v));
}

/** 1234567 → "1,234,567". */
export function groupDigits(n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Bytes as B/KiB/MiB/GiB. */
export function humanBytes(b) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = b;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return u === 0 ? `${v} ${units[u]}` : `${v.toFixed(1)} ${units[u]}`;
}

/** "[560, 384]". */
export function fmtShape(shape) {
  return `[${shape.join(', ')}]`;
}
