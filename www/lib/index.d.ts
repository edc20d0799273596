// Types of the quantscope npm package (www/lib/index.js).

/** One parameter of an observer, from the registry. */
export type ParamSpec = {
  name: string;
  doc: string;
  /** The framework's default; null when the framework derives it (e.g. quant_min from dtype). */
  default: number | string | boolean | null;
  /** What a change invalidates: the data pass, or only the search on the existing state. */
  affects: 'data' | 'search';
} & (
  | { type: 'int'; min: number; max: number }
  | { type: 'float'; min: number; max: number; log: boolean }
  | { type: 'bool' }
  | { type: 'choice'; options: string[] }
  | { type: 'vector' }
);

export type Family = 'torch' | 'quark' | 'horizon' | 'ort' | 'modelopt';
export type Granularity = 'per_tensor' | 'per_channel' | 'per_group' | 'per_block' | 'pass_through';

/** One observer of the registry. */
export interface ObserverInfo {
  id: string;
  family: Family;
  framework: string;
  framework_version: string;
  granularity: Granularity;
  summary: string;
  params: ParamSpec[];
  /** Framework quirks this observer reproduces on purpose. */
  quirks: string[];
  /** For a `.fixed` variant: the faithful observer it corrects. */
  corrects: string | null;
}

export interface Preset {
  name: string;
  observer: string;
  params: Record<string, unknown>;
  doc: string;
}

export interface NonFiniteCounts {
  nan: number;
  pos_inf: number;
  neg_inf: number;
}

export interface Histogram {
  lo: number;
  hi: number;
  counts: Float64Array;
}

/** A loaded tensor (one or several calibration batches). */
export declare class Tensor {
  readonly name: string;
  readonly shape: number[];
  readonly dtype: string;
  readonly elements: number;
  readonly batches: number;
  readonly nonfinite: NonFiniteCounts;
  readonly min: number | null;
  readonly max: number | null;
  readonly mean: number | null;
  readonly std: number | null;
  /** The histogram panels draw (2048 bins over the finite range). */
  readonly histogram: Histogram;
  /** Free the WebAssembly memory held by this tensor. */
  free(): void;
}

export interface QdqMetrics {
  mse: number;
  max_abs_err: number;
  sqnr_db: number | null;
  clipped_fraction: number;
  count: number;
}

export interface ErrorInfo {
  kind: 'load' | 'param' | 'framework' | 'unknown' | 'input';
  message: string;
  /** The framework's exception class for `framework` errors, e.g. "AssertionError". */
  exception?: string;
  stage?: 'init' | 'forward' | 'calculate_qparams';
  param?: string;
}

export interface QParams {
  scale: number[];
  zero_point: number[];
  grid: { kind: 'int'; quant_min: number; quant_max: number } | { kind: 'float'; format: string; max: number } | { kind: 'none' };
  axis: number | null;
  min_val: number[];
  max_val: number[];
  clip_range?: [number[], number[]];
  amax?: number[];
  extra?: Record<string, unknown>;
  notes?: string[];
}

/** What observe() returns. Numbers are per slice (one entry per tensor, one per channel). */
export interface ObserveResult {
  observer: string;
  family: Family;
  granularity: Granularity;
  params: Record<string, unknown>;
  ok: boolean;
  error: ErrorInfo | null;
  qparams: QParams | null;
  metrics: QdqMetrics | null;
  /** The chosen clipping range: the searched range when the observer searches, else min/max. */
  clip_min: number[];
  clip_max: number[];
  /** Representable range of the grid. */
  grid_min: number[];
  grid_max: number[];
  scale: number[];
  zero_point: number[];
  quirks: string[];
  /** True when the last change was applied without a pass over the data. */
  retuned: boolean;
  /** Plot data of the panel. */
  view: unknown;
}

export interface CurveView {
  /** [threshold, mse, sqnr_db] */
  points: [number, number, number | null][];
  best: number | null;
  label: string;
  markers: { observer: string; color: number; threshold: number | null; mse: number; sqnr_db: number | null }[];
}

/** Initialise the WebAssembly module (idempotent). Browsers/Deno fetch the .wasm next to the module; Node reads it from disk. */
export function init(input?: BufferSource | URL | string | Response | WebAssembly.Module): Promise<void>;
/** Initialise synchronously from the .wasm bytes or a compiled module. */
export function initSync(bytes: BufferSource | WebAssembly.Module): void;
export function version(): string;
/** Which WebAssembly build was loaded: "simd128" or "baseline" (null before init). */
export function loadedFlavour(): "simd128" | "baseline" | null;
export function observers(): ObserverInfo[];
export function presets(): Preset[];

export interface LoadOptions {
  /** File name shown in titles (and used to recognise the format when the bytes do not). */
  name?: string;
  /** Member of an .npz/.safetensors file (default: the first). */
  member?: string;
  /** Shape of a Float32Array of values (default: 1-D). */
  shape?: number[];
  /** Split the (single) tensor into `count` batches along `axis`. */
  split?: { axis: number; count: number } | null;
}

/** Load .npy/.npz/.safetensors bytes, or Float32Array values; an array = calibration batches in order. */
export function loadTensor(data: BufferSource | Float32Array | Array<BufferSource | Float32Array>, options?: LoadOptions): Tensor;

/** Run an observer over every batch of `tensor`. Observer errors are in the result, not thrown. */
export function observe(tensor: Tensor, observerId: string, params?: Record<string, number | string | boolean | null>): ObserveResult;

export function errorCurve(tensor: Tensor, options?: { bits?: number; scheme?: 'affine' | 'symmetric'; points?: number; results?: ObserveResult[] }): CurveView;

/** Draw the explorer's panel for `result` into `element` (browsers); returns the panel element. */
export function renderPanel(element: Element, result: ObserveResult, options?: { color?: number; logCounts?: boolean }): HTMLElement;

export interface SvgOptions {
  width?: number;
  height?: number;
  logCounts?: boolean;
  sqnr?: boolean;
  curve?: boolean;
  bits?: number;
  scheme?: 'affine' | 'symmetric';
  title?: string;
}

/** SVG of one result (a panel) or of several results of one tensor (a comparison with the error curve). No DOM needed. */
export function renderSvg(results: ObserveResult | ObserveResult[], options?: SvgOptions): string;

/** A number format family or a rounding optimiser of the quantizer registry. */
export interface QuantizerInfo {
  id: string;
  summary: string;
  params: ParamSpec[];
}

/** The quantizer registry. */
export function quantizers(): { formats: QuantizerInfo[]; optimisers: QuantizerInfo[] };

/** One format measured on a tensor (or the reason it does not apply). */
export type FormatRow =
  | {
      /** Label, e.g. `int4 per channel`, `mxfp4_e2m1`, `bfp16 (block 8)`. */
      format: string;
      id: string;
      params: Record<string, number | string | boolean>;
      /** Storage per value, shared scales and zero points included. */
      bits_per_value: number;
      mse: number;
      max_abs_err: number;
      /** null when undefined (no error at all, or an all-zero tensor). */
      sqnr_db: number | null;
      clipped_fraction: number;
      count: number;
    }
  | { id: string; params: Record<string, number | string | boolean>; error: string };

/** Every format of the standard line-up (plus `extra`) on `tensor`'s first batch. */
export function compareFormats(tensor: Tensor, options?: { extra?: Array<{ id: string; params?: Record<string, number | string | boolean> }> }): FormatRow[];

/** A tensor for `adaround`: file bytes, or values with a shape. */
export type TensorSource = BufferSource | { bytes: BufferSource; member?: string } | { data: Float32Array; shape: number[] };

export interface AdaRoundProgress {
  iteration: number;
  recon_loss: number;
  round_loss: number;
  beta: number;
  binary_fraction: number;
}

export interface AdaRoundResult {
  nearest: { output_mse: number; output_sqnr_db: number | null };
  adaround: { output_mse: number; output_sqnr_db: number | null };
  /** Weights rounded the other way than round-to-nearest. */
  flipped: number;
  weights: number;
  /** Share of soft decisions exactly 0 or 1 at the end. */
  final_binary_fraction: number;
  mse_reduction: number;
  iterations_run: number;
  cancelled: boolean;
  weight_shape: [number, number];
  input_shape: [number, number];
  config: Record<string, unknown>;
  grid: { scale: number[]; zero_point: number[]; quant_min: number; quant_max: number };
  history: AdaRoundProgress[];
}

/** AdaRound on one linear layer (W [out, in], X [n, in]); `onProgress` may return false to stop. */
export function adaround(
  weight: TensorSource,
  inputs: TensorSource,
  params?: Record<string, number | string>,
  options?: { onProgress?: (status: { iterations_run: number; iterations: number; done: boolean; points: AdaRoundProgress[] }) => boolean | void },
): AdaRoundResult;
