// The rotation preview the explorer's views share: a seeded randomized Hadamard rotation of every
// row along its last axis (QuaRot/SpinQuant style, src/rotation.rs; the CLI's
// `--rotate hadamard[:SEED]`), applied to the selected tensor before observing or quantizing. The
// page keeps one setting — the toolbar's "Rotate (Hadamard)" and its seed, in the URL as
// `rotate=hadamard:SEED` (app.js) — and gives it to every view as the `rotate` key of the page
// state (`'hadamard:SEED'` or null). The observers view asks the engine for each panel's run after
// rotation (`observeRotated`), the formats view for each format row's (`evaluateFormat` with
// `rotate`); every number shown is the engine's.
import { fmtNum } from '../lib/format.js';
import { limits, rotationHelps as engineHelps } from '../pkg/quantscope.js';

/**
 * A rotation's gain in SQNR (dB) below which it "does not help": the engine's threshold, the one
 * of the CLI's verdict under `formats --rotate` (src/rotation.rs `NO_HELP_DB`).
 */
export function helpsDb() {
  return limits().rotationHelpsDb;
}

/** The largest seed the page offers: the integers JavaScript holds exactly. */
const MAX_SEED = Number.MAX_SAFE_INTEGER;

/** The engine's spelling of the rotation with `seed` (the CLI's `--rotate` value). */
export function rotationSpec(seed) {
  return `hadamard:${seed}`;
}

/** `text` as a seed (a non-negative integer the page holds exactly), or null. */
export function parseSeed(text) {
  const s = String(text ?? '').trim();
  if (!/^\d+$/.test(s)) return null;
  const seed = Number(s);
  return seed <= MAX_SEED ? seed : null;
}

/**
 * A rotation as the URL spells it (`hadamard` or `hadamard:SEED`), normalised to
 * `hadamard:SEED`; null for anything else (no rotation).
 */
export function parseRotation(text) {
  if (text === 'hadamard') return rotationSpec(0);
  const m = /^hadamard:(\d+)$/.exec(text || '');
  const seed = m ? parseSeed(m[1]) : null;
  return seed === null ? null : rotationSpec(seed);
}

/** The seed of a rotation spec (`hadamard:SEED`). */
export function seedOf(spec) {
  return parseSeed((spec || '').split(':')[1]) ?? 0;
}

/**
 * Whether the rotation helped, from the engine's SQNR before and after (dB): true when it gained
 * at least `helpsDb()` (the engine decides); null when either is not a number (lossless, an all-zero input, no metrics).
 */
export function rotationHelps(before, after) {
  if (typeof before !== 'number' || typeof after !== 'number') return null;
  return engineHelps(before, after);
}

/**
 * An SQNR as the page writes it, from metrics `{sqnr_db, mse, count}` (a report's, a format
 * row's): dB, `∞ (lossless)` when there is no error at all, `—` when undefined.
 */
export function sqnrText(m) {
  if (m.sqnr_db !== null && m.sqnr_db !== undefined) return `${fmtNum(m.sqnr_db)} dB`;
  return m.mse === 0 && m.count > 0 ? '∞ (lossless)' : '—';
}

/** The value of a `data-rotated-sqnr` attribute: the engine's number, `null` when not finite. */
export function sqnrAttr(sqnr) {
  return sqnr === null || sqnr === undefined ? 'null' : String(sqnr);
}

/** Why small-block formats gain little: the note shown beside the rotated numbers. */
export const BLOCK_NOTE =
  'Block formats with small blocks — NVFP4’s 16 values, MX’s 32, ggml’s blocks of 32 and the K-quants’ sub-blocks of 16 or 32 in super-blocks of 256 — already localise outliers: each block’s scale follows its own values, so an outlier spoils little but its block, and rotation helps them little. It helps most where one scale covers a whole tensor, row or channel.';
