// Types of the quantscope npm package (www/lib/index.js): hand-written signatures only. Every
// data type is generated from the Rust types (tsify) into ../pkg/quantscope.d.ts and re-exported
// from there, so these declarations cannot drift from what the engine returns.
import type {
  AdaRoundOutcome,
  AdaRoundStart,
  AdaRoundStatus,
  CurveRequest,
  CurveView,
  DiffReport,
  DiffRow,
  DiffTensorView,
  FileInfo,
  FormatResult,
  FormatsTarget,
  Listing,
  MethodChoices,
  ModelReport,
  ObserverEntry,
  MemberRef,
  PanelView,
  Preset,
  Quantized,
  QuantizerRegistry,
  Registry,
  Report,
  Rotated,
  Selection,
  Session,
  Diagnosis,
  Outcome,
  Step,
  StepView,
  Style,
  TensorRow,
  TensorSummary,
} from '../pkg/quantscope.js';

export type {
  Candidates,
  CandidatesView,
  Diagnosis,
  Outcome,
  Step,
  StepView,
  AdaRoundConfig,
  AdaRoundOutcome,
  AdaRoundStart,
  AdaRoundStatus,
  Affects,
  ChannelView,
  CurveScheme,
  CurveRequest,
  CurveView,
  BlockErrors,
  DiffMetrics,
  DiffReport,
  DiffRow,
  DiffTensorView,
  ErrorInfo,
  Family,
  FileInfo,
  FormatResult,
  CodecEntry,
  FormatsTarget,
  Granularity,
  Grid,
  LayerProfileView,
  LintItem,
  ListedTensor,
  Listing,
  LoadError,
  Marker,
  MemberInfo,
  MemberRef,
  MethodChoices,
  MethodResult,
  ModelReport,
  NonFiniteCounts,
  ObserverEntry,
  OptimiserSpec,
  OutputError,
  PanelView,
  ParamKind,
  ParamSpec,
  Params,
  Preset,
  Progress,
  QdqMetrics,
  QParams,
  Quantized,
  QuantizerRegistry,
  Registry,
  Report,
  ResultKind,
  Rotated,
  RtnResult,
  Selection,
  SliceNumbers,
  Split,
  Stats,
  Style,
  TensorRow,
  TensorSummary,
  Unpaired,
  WeightGrid,
  WeightScheme,
  ZeroPoint,
} from '../pkg/quantscope.js';

/** @deprecated The former name of {@link CurveRequest} (what an error curve is asked for). */
export type CurveSpec = CurveRequest;

/** The display histogram of a tensor (what panels draw), as the session returns it. */
export type DisplayHistogram = NonNullable<ReturnType<Session['histogram']>>;

/** The bytes of a file: any typed array or (Shared)ArrayBuffer. */
export type Bytes = ArrayBufferView | ArrayBufferLike;

/** Parameter values by name, with the frameworks' own keywords and spellings. */
export type ParamValues = Record<string, unknown>;

/** Initialise the WebAssembly module (idempotent). Browsers/Deno fetch the .wasm next to the module; Node reads it from disk. */
export function init(
  input?: Bytes | URL | string | Response | WebAssembly.Module,
  options?: {
    /** Load a small synthetic file and run the default observers once on it so that the loading code and their kernels are optimised before the first real tensor (default true; about 0.2 s). */
    warm?: boolean;
    /** Node: the threads `observeMany` uses, the calling one included (default one per core); init starts the others, which run the observers' warm-up meanwhile. */
    threads?: number;
  },
): Promise<void>;
/** Initialise synchronously from the .wasm bytes or a compiled module. */
export function initSync(bytes: Bytes | WebAssembly.Module): void;
export function version(): string;
/** Which WebAssembly build was loaded: "simd128" or "baseline" (null before init). */
export function loadedFlavour(): "simd128" | "baseline" | null;
export function observers(): ObserverEntry[];
export function presets(): Preset[];
/** What a report shows as a panel (the engine's one display function). */
export function panelView(report: Report): PanelView;

/** A loaded tensor (one or several calibration batches). */
export declare class Tensor {
  /** The engine holding the tensor. */
  readonly engine: Engine | null;
  readonly files: FileInfo[];
  readonly name: TensorSummary['name'];
  readonly shape: TensorSummary['shape'];
  readonly dtype: TensorSummary['dtype'];
  readonly elements: TensorSummary['elements'];
  readonly batches: TensorSummary['batches'];
  readonly nonfinite: TensorSummary['nonfinite'];
  readonly min: TensorSummary['min'];
  readonly max: TensorSummary['max'];
  readonly mean: TensorSummary['mean'];
  readonly std: TensorSummary['std'];
  /** The histogram panels draw (2048 bins over the finite range). Mean, std and histogram are computed when first read. */
  readonly histogram: DisplayHistogram;
  /** How the batches were split (`LoadOptions.split`). */
  readonly split: LoadOptions['split'] | null;
  /** Mean, std and display histogram at once (computed on first use). */
  statistics(): { mean: TensorSummary['mean']; std: TensorSummary['std']; histogram: DisplayHistogram };
  /** The batches as loaded tensors of the engine. */
  readonly batchRefs: MemberRef[];
  /** The values of the first batch (the whole tensor when there is one), row-major. */
  values(): Float32Array;
  /** Free the WebAssembly memory held by this tensor. */
  free(): void;
}

export interface LoadOptions {
  /** File name shown in titles (and used to recognise the format when the bytes do not). */
  name?: string;
  /** Member of an .npz/.safetensors file (default: the first). */
  member?: string;
  /** Shape of a Float32Array of values (default: 1-D). */
  shape?: number[];
  /** Split the (single) tensor into `count` batches along `axis`. */
  split?: Selection['split'];
}

/** Load .npy/.npz/.safetensors bytes (or a torch.save pickle, GGUF or ONNX file held whole; `member` picks its tensor), or Float32Array values (with `shape`); an array = calibration batches in order. */
export function loadTensor(data: Bytes | Array<Bytes>, options?: LoadOptions): Tensor;

/**
 * Run an observer over every batch of `tensor`. Observer errors are in the report, not thrown.
 * A vector parameter (llm-compressor's `importance`, torchao's fixed `scale`) may be a Tensor,
 * a typed array or an array of numbers. With `{ explain: true }` the report carries `derivation`
 * (the steps and numbers by which the observer reached its range and scale).
 */
export function observe(tensor: Tensor, observerId: string, params?: ParamValues, options?: { explain?: boolean }): Report;

/** One observation of `observeMany`: an observer id, or the id with its parameters. */
export type Observation = string | { id: string; params?: ParamValues };

/**
 * Run each observer of `list` over `tensor` as `observe` would, side by side: in Node shared out
 * between the calling thread and worker threads (`threads` in all, default one per core; tensors
 * under 1M values stay in the calling thread unless `threads` is given), elsewhere one after the
 * other. Resolves to the reports in the order of `list`.
 */
export function observeMany(tensor: Tensor, list: Observation[], options?: { threads?: number; explain?: boolean }): Promise<Report[]>;

/** A quantized tensor: cost, error metrics and the dequantized values (row-major). */
export type QuantizeResult = Quantized & { values: Float32Array };

/**
 * Quantize–dequantize `tensor`'s first batch with a format of `quantizers().formats` or one of
 * Quark's quantizers, with the library's own keys (as `quantscope quantize`); ggml's `imatrix`
 * may be a Tensor, a typed array or an array. Throws when the quantizer refuses.
 */
export function quantize(tensor: Tensor, id: string, params?: ParamValues, options?: { explain?: boolean; block?: number | null }): QuantizeResult & { derivation?: BlockDerivation };

/** How a format stored one block (`quantscope quantize --explain --json`'s `derivation`). */
export type BlockDerivation = { format: string; block: number; blocks: number; steps: Step[] };

export function errorCurve(tensor: Tensor, options?: { bits?: number; scheme?: CurveRequest['scheme']; points?: number; results?: Report[] }): CurveView | null;

/** Draw the explorer's panel for `report` into `element` (browsers); returns the panel element. */
export function renderPanel(element: Element, report: Report, options?: { color?: number; logCounts?: boolean }): HTMLElement;

export interface SvgOptions {
  width?: number;
  height?: number;
  logCounts?: boolean;
  sqnr?: boolean;
  curve?: boolean;
  bits?: number;
  scheme?: CurveRequest['scheme'];
  title?: string;
}

/** SVG of one report (a panel) or of several reports of one tensor (a comparison with the error curve). No DOM needed. */
export function renderSvg(results: Report | Report[], options?: SvgOptions): string;

/** The quantizer registry. */
export function quantizers(): QuantizerRegistry;

/** One format measured on a tensor, or the reason it does not apply. */
export type FormatRow = (FormatResult & { extra: boolean }) | { id: string; params: ParamValues; extra: boolean; error: string };

/** Every format of the standard line-up (plus `extra`) on `tensor`'s first batch. */
export function compareFormats(tensor: Tensor, options?: { extra?: Array<{ id: string; params?: ParamValues }> }): FormatRow[];

/** A tensor for `adaround`: file bytes, or values with a shape. */
export type TensorSource = Bytes | { bytes: Bytes; member?: string } | { data: Float32Array; shape: number[] };

/** What AdaRound achieved, how it started, and whether it was stopped early. */
export type AdaRoundResult = AdaRoundOutcome & AdaRoundStart & { cancelled: boolean };

/** A progress report of a long operation; AdaRound's also carry its status (with the points learned). */
export type ProgressReport = { fraction: number; label: string } & Partial<AdaRoundStatus>;

/** AdaRound on one linear layer (W [out, in], X [n, in]); `onProgress` may return false to stop. */
export function adaround(
  weight: TensorSource,
  inputs: TensorSource,
  params?: ParamValues,
  options?: { onProgress?: (status: ProgressReport) => boolean | void },
): AdaRoundResult;

// ---------------------------------------------------------------------------------------------
// The engine façade and its worker RPC (engine.js, rpc.js)

/** Progress and cancel of a long operation. */
export interface RunOptions<P = ProgressReport> {
  /** Called with each progress report; returning false asks the operation to stop. */
  onProgress?: (progress: P) => boolean | void;
  /** Aborting it asks the operation to stop. */
  signal?: AbortSignal;
}

/** Anything the engine reads: a File/Blob (asynchronously), file bytes, or values with a shape. */
export type EngineInput =
  | Blob
  | Bytes
  | { bytes: Bytes; name?: string }
  | { data: Float32Array; shape?: number[]; name?: string }
  /** One tensor of a checkpoint (read from its byte range only): the model view's row click. */
  | { checkpoint: CheckpointFile[]; tensor: { position?: number; name?: string }; name?: string };

/** A loaded file as `load` reports it. */
export type LoadedFile = FileInfo & { streamed: boolean; allMembers: FileInfo['members'] };

/** The engine's registry: observers and presets, the quantizer registry, limits and version. */
export type EngineRegistry = Registry & {
  quantizers: QuantizerRegistry;
  limits: ReturnType<typeof import('../pkg/quantscope.js').limits>;
  version: string;
};

/** One side of an AdaRound run: any engine input, the member to take, a display name. */
export interface AdaRoundSide {
  file: EngineInput;
  member?: string;
  name?: string;
}

/** One file of a checkpoint for `rankModel`: a File/Blob (named by its folder path), bytes, or anything that reads byte ranges. */
export type CheckpointFile =
  | Blob
  | Bytes
  | { blob: Blob; name?: string }
  | { bytes: Bytes; name?: string }
  | { name?: string; size: number; read(start: number, end: number): Uint8Array | Promise<Uint8Array> };

/** A progress report of `rankModel`: the listing once, then the rows ranked since the previous report. */
export type ModelProgress = { fraction: number; label: string; listing?: Listing; methods?: string[]; rows?: TensorRow[] };

/** The ranking of a checkpoint (`tensors` worst first, as `quantscope model --json`), its methods, and whether it was stopped early. */
export type ModelRanking = ModelReport & { methods: string[]; cancelled: boolean };

/** One side of a diff: a file (a path in Node/Deno, a File/Blob, bytes, a range reader) or a folder path, or a list of files. */
export type DiffInput = CheckpointFile | string | Array<CheckpointFile | string>;

/** A progress report of `diff`: the number of pairs once listed, then each pair's row as it is compared. */
export type DiffProgress = { fraction: number; label: string; pairs?: number; row?: DiffRow };

/** The comparison figure's data: title, subtitle, display histogram, panel views and the curve. */
export type ComparisonData = { title: string; subtitle: string; hist: unknown; panels: Array<{ observer: string }>; curve: (CurveView & { markers: Array<{ observer: string }> }) | null };

/** The one JavaScript façade over the WebAssembly session (Node, Deno, Observable, page, worker). */
/** Arguments of the engine's report calls (`observe`, `update`, `updateDeferred`). */
export type ReportArgs = { id: string; params?: ParamValues; view?: boolean; packed?: boolean };

export declare class Engine {
  constructor();
  free(): void;
  registry(): EngineRegistry;
  quantizers(): QuantizerRegistry;
  limits(): EngineRegistry['limits'];
  load(args: { files: EngineInput[]; names?: string[]; members?: Record<number, string> }, run?: RunOptions): Promise<LoadedFile[]>;
  inspect(args: { files: EngineInput[]; names?: string[] }, run?: RunOptions): Promise<Array<{ name: string; members: FileInfo['members'] }>>;
  select(args: { selection: Selection }): { summary: TensorSummary; hist: DisplayHistogram | null };
  /**
   * `view`: with the panel's view (`report.view`); `packed`: per-slice arrays of more than 1024
   * numbers as Float64Array (the page's path; the numbers are the plain report's).
   */
  observe(args: ReportArgs): Report;
  update(args: ReportArgs): Report;
  /** The clipping range first (onProgress gets the report with `metrics_pending`), then the metrics. */
  updateDeferred(args: ReportArgs, run?: RunOptions<Report>): Promise<Report>;
  complete(args: { id: string; view?: boolean; packed?: boolean }): Report | null;
  /** The derivation of `id`'s last report (its search run again on the collected state). */
  explain(args: { id: string; view?: false }): Step[] | null;
  explain(args: { id: string; view: true }): StepView[] | null;
  /**
   * What makes the selected tensor hard and what helped, given the methods' outcomes and the
   * reports of observers that ran on it (read as the CLI reads them).
   */
  diagnose(args: { outcomes?: Outcome[]; reports?: Report[] }): Diagnosis | null;
  remove(args: { id: string }): null;
  results(): Report[];
  curve(args: { spec: CurveRequest; ids?: string[]; colors?: number[] }): CurveView | null;
  comparisonSvg(args: { ids: string[]; colors: number[]; curve?: CurveRequest | null; style?: Style; width?: number }): string;
  /** What the comparison figure shows (title, histogram, panel views, curve), for joining parts. */
  comparison(args: { ids: string[]; colors: number[]; curve?: CurveRequest | null }): ComparisonData;
  /** A comparison (as `comparison` returns it) as SVG. */
  renderComparisonSvg(args: { comparison: ComparisonData; style?: Style; width?: number }): string;
  formats(args?: { extra?: Array<{ id: string; params?: ParamValues }> }, run?: RunOptions): Promise<{ name: FormatsTarget['name']; shape: FormatsTarget['shape']; rows: FormatRow[] }>;
  evaluateFormat(args: { id: string; params?: ParamValues; rotate?: string | null }): FormatResult & { rotation?: string };
  /** Not run when `run.signal` was aborted before its turn: throws `Cancelled` (a worker call rejects, `cancelled`). */
  observeRotated(args: { id: string; params?: ParamValues; rotate?: string }, run?: Pick<RunOptions, 'signal'>): Rotated;
  /** How a format stored one block of the selected tensor (the last step: what it stores). */
  explainFormat(args: { id: string; params?: ParamValues; block?: number | null; view?: false }): BlockDerivation;
  explainFormat(args: { id: string; params?: ParamValues; block?: number | null; view: true }): { format: string; block: number; blocks: number; steps: StepView[] };
  /** The selected tensor quantize–dequantized (a vector parameter inline or as a loaded tensor). */
  quantize(args: { id: string; params?: ParamValues }): QuantizeResult;
  /** The values of a loaded tensor. */
  tensorValues(args: MemberRef): Float32Array;
  /** One tensor of a file that is not loaded (a vector parameter opened from a file). */
  readVector(args: { file: EngineInput; name?: string; member?: string }, run?: RunOptions): Promise<{ name: string; member: string; shape: number[]; values: Float32Array }>;
  adaround(args: { w: AdaRoundSide; x: AdaRoundSide; params?: ParamValues }, run?: RunOptions): Promise<AdaRoundResult>;
  /** The methods a checkpoint can be ranked by (observer ids and format labels). */
  modelMethods(): MethodChoices;
  /** Rank every tensor of a checkpoint, one tensor's bytes at a time; `methods` null: the defaults. */
  rankModel(args: { files: CheckpointFile[]; methods?: string[] | null; maxElements?: number | null }, run?: RunOptions<ModelProgress>): Promise<ModelRanking>;
  /** A ranking as CSV (`quantscope model --csv`) with the columns of `methods`. */
  modelCsv(args: { report: ModelReport; methods: string[] }): string;
  /** Compare a quantized checkpoint with its original, one pair of weights at a time (`quantscope diff --json`). */
  diff(args: { original: CheckpointFile | CheckpointFile[]; quantized: CheckpointFile | CheckpointFile[]; imatrix?: CheckpointFile | null }, run?: RunOptions<DiffProgress>): Promise<DiffReport>;
  /** One pair of a diff up close: both histograms over one range, the error's, the error per block. */
  diffTensor(args: { original: CheckpointFile | CheckpointFile[]; quantized: CheckpointFile | CheckpointFile[]; pair: { original: string; quantized: string } }, run?: RunOptions): Promise<DiffTensorView>;
  /** A diff report as CSV (`quantscope diff --csv`). */
  diffCsv(args: { report: DiffReport }): string;
  debugPanic(args?: { message?: string }): null;
  panicMessage(): string | null;
}

/** An error of an engine call. */
export declare class EngineError extends Error {
  readonly panic: boolean;
  readonly cancelled: boolean;
  readonly restarted: boolean;
}

/** The methods of the engine that `call()` reaches. */
export type EngineMethod = Exclude<keyof Engine, 'free'>;

/** Options of a call: progress, cancel, buffers to transfer, and whether it counts as busy. */
export interface CallOptions extends RunOptions<any> {
  transfer?: Transferable[];
  background?: boolean;
}

/** Engine calls to a module Worker running `serve`, restarted after a crash. */
export declare class RemoteEngine {
  constructor(worker: URL | string | (() => Worker), hooks?: { onCrash?: (error: EngineError) => void });
  call<M extends EngineMethod>(method: M, args?: Parameters<Engine[M]>[0], options?: CallOptions): Promise<Awaited<ReturnType<Engine[M]>>>;
  readonly busy: number;
  readonly dead: boolean;
}

/** The same `call()` on an Engine in this thread. */
export declare class LocalEngine {
  constructor(engine: Engine, options?: { concurrent?: EngineMethod[] });
  readonly engine: Engine;
  call<M extends EngineMethod>(method: M, args?: Parameters<Engine[M]>[0], options?: CallOptions): Promise<Awaited<ReturnType<Engine[M]>>>;
  readonly busy: number;
  readonly dead: boolean;
}

/** Answer engine calls in this Web Worker. */
export function serve(createEngine: () => Engine | Promise<Engine>, options?: { concurrent?: EngineMethod[] }): void;

/**
 * Compare a quantized checkpoint with its original, weight by weight (`quantscope diff --json`):
 * paths in Node/Deno (a folder takes its checkpoint and configuration files), Files in browsers.
 */
export function diff(original: DiffInput, quantized: DiffInput, options?: { imatrix?: CheckpointFile | string | null; onProgress?: (progress: DiffProgress) => unknown; signal?: AbortSignal }): Promise<DiffReport>;
