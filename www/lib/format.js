// Number formatting shared by the page and the npm package (mirrors quantscope::plot::fmt_num).

/** About four significant digits, exponent form when very large or small, a real minus sign. */
export function fmtNum(v) {
  if (v === null || v === undefined) return '—';
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '∞' : '−∞';
  if (v === 0) return '0';
  const a = Math.abs(v);
  let s;
  if (a < 1e-3 || a >= 1e5) {
    const [m, e] = v.toExponential(2).split('e');
    s = `${m.replace(/\.?0+$/, '')}e${Number(e)}`;
  } else {
    const digits = Math.min(6, Math.max(0, 3 - Math.floor(Math.log10(a))));
    s = v.toFixed(digits);
    if (s.includes('.')) s = s.replace(/\.?0+$/, '');
  }
  return s.replace(/-/g, '−');
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
