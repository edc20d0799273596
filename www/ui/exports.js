// Exports: results as JSON and CSV, figures as SVG (rendered by the wasm plotters-svg code) and
// PNG (that SVG rasterised on a canvas).
import { viewOf } from '../lib/panel.js';

/** Offer `data` (string or Blob) as a download named `name`. */
export function download(name, data, type) {
  const blob = data instanceof Blob ? data : new Blob([data], { type });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/**
 * Offer a table view's export `kind` (`json`, `csv` or `svg`, made by `make[kind]()`) as
 * `<base>-<suffix>.<kind>`, `base` being the first file's name without folder and extension
 * (`fallback` when there is none).
 */
export function downloadExport(kind, file, fallback, suffix, make) {
  const types = { json: 'application/json', csv: 'text/csv', svg: 'image/svg+xml' };
  const base = ((file && file.name ? file.name.split('/').pop() : fallback).replace(/\.[^.]*$/, '') || fallback)
    .replace(/[^A-Za-z0-9._-]+/g, '_');
  download(`${base}-${suffix}.${kind}`, make[kind](), types[kind]);
}

/** The JSON export: tool version, tensor summary, curve settings and every result. */
export function resultsJson({ version, summary, curve, results }) {
  return JSON.stringify(
    {
      quantscope: version,
      tensor: summary,
      curve,
      results,
    },
    null,
    2,
  );
}

const CSV_COLUMNS = [
  'observer', 'channel', 'ok', 'error', 'clip_min', 'clip_max', 'grid_min', 'grid_max',
  'scale', 'zero_point', 'min_val', 'max_val', 'mse', 'sqnr_db', 'max_abs_err', 'clipped_fraction', 'params',
];

function csvCell(v) {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  // Quote, and neutralise spreadsheet formulas in text cells.
  const safe = typeof v === 'string' && /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) || safe !== s ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * The CSV export of reports: one row per observer (per slice for per-channel, per-group and
 * per-block observers), with the numbers the panels show (the display function's slices).
 */
export function resultsCsv(results) {
  const lines = [CSV_COLUMNS.join(',')];
  for (const r of results) {
    const m = r.metrics || {};
    const s = viewOf(r).slices || {};
    const n = Math.max(1, s.scale ? s.scale.length : 0);
    const perChannel = n > 1;
    for (let i = 0; i < n; i++) {
      const row = {
        observer: r.observer,
        channel: perChannel ? i : '',
        ok: r.ok,
        error: r.error ? r.error.message : '',
        clip_min: s.clip_min?.[i],
        clip_max: s.clip_max?.[i],
        grid_min: s.grid_min?.[i],
        grid_max: s.grid_max?.[i],
        scale: s.scale?.[i],
        zero_point: s.zero_point?.[i],
        min_val: r.min_val?.[i],
        max_val: r.max_val?.[i],
        mse: m.mse,
        sqnr_db: m.sqnr_db,
        max_abs_err: m.max_abs_err,
        clipped_fraction: m.clipped_fraction,
        params: JSON.stringify(r.params || {}),
      };
      lines.push(CSV_COLUMNS.map((c) => csvCell(row[c])).join(','));
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Rasterise an SVG document to a PNG Blob at `scale`× its size. */
export async function svgToPng(svg, scale = 2) {
  const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    img.decoding = 'sync';
    await new Promise((resolve, reject) => {
      img.onload = resolve;
      img.onerror = () => reject(new Error('could not rasterise the SVG'));
      img.src = url;
    });
    const canvas = document.createElement('canvas');
    canvas.width = Math.round(img.naturalWidth * scale);
    canvas.height = Math.round(img.naturalHeight * scale);
    const ctx = canvas.getContext('2d');
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
    return await new Promise((resolve) => canvas.toBlob(resolve, 'image/png'));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** A file-name-safe version of `s`. */
export function safeName(s) {
  return String(s).replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80) || 'quantscope';
}
