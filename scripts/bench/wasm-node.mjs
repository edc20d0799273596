// The wasm package in Node, timed on one tensor file: prints JSON for scripts/bench.sh.
//
//   node scripts/bench/wasm-node.mjs FILE.npy REPEAT [ID...]
//
// Without IDs it times the observers of scripts/bench/observers-per-tensor.txt, the list the CLI
// and library timings read.
// For each repetition a fresh tensor is loaded (so no state is reused), then observed. Only the
// functions `engine()` and `observeOnce()` know the package's JS API: adapt them when it
// changes.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const [file, repeatText, ...given] = process.argv.slice(2);
const listed = () =>
  readFileSync(new URL('./observers-per-tensor.txt', import.meta.url), 'utf8')
    .split('\n')
    .map((line) => line.split('#')[0].trim())
    .filter((id) => id);
const ids = given.length ? given : listed();
const repeat = Number(repeatText) || 3;

/** The npm package, initialised; and which wasm flavour it loaded, when it says. */
async function engine() {
  const qs = await import('../../www/lib/index.js');
  await qs.init();
  let flavour = null;
  try {
    flavour = (await import('../../www/lib/wasm-flavour.js')).loadedFlavour?.() ?? null;
  } catch {
    flavour = null;
  }
  return { qs, flavour };
}

/** Load `bytes` as a tensor and run `observers` on it: [loadSeconds, observeSeconds, results]. */
function observeOnce(qs, bytes, observers) {
  const t0 = performance.now();
  const tensor = qs.loadTensor(bytes, { name: 'bench.npy' });
  const t1 = performance.now();
  const results = observers.map((id) => qs.observe(tensor, id));
  const t2 = performance.now();
  tensor.free();
  return [(t1 - t0) / 1e3, (t2 - t1) / 1e3, results];
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const { qs, flavour } = await engine();
const bytes = new Uint8Array(readFileSync(file));
const time = (observers, times) => {
  observeOnce(qs, bytes, observers); // warm-up
  const load = [];
  const observe = [];
  let last = null;
  for (let i = 0; i < times; i++) {
    const [l, o, results] = observeOnce(qs, bytes, observers);
    load.push(l);
    observe.push(o);
    last = results;
  }
  return { load_median_s: median(load), observe_median_s: median(observe), load_runs_s: load, observe_runs_s: observe, last };
};
const summary = (r) => ({ observer: r.observer, ok: r.ok, scale: r.scale ?? r.qparams?.scale, zero_point: r.zero_point ?? r.qparams?.zero_point, metrics: r.metrics });
const histogram = time(['torch.HistogramObserver'], repeat);
const minmax = time(['torch.MinMaxObserver'], repeat);
const all = time(ids, Math.min(repeat, 3));
console.log(JSON.stringify({
  node: process.version,
  flavour,
  histogram_observer: { ...histogram, last: histogram.last.map(summary) },
  minmax_qdq_metrics: { ...minmax, last: minmax.last.map(summary) },
  all_observers: { ...all, last: all.last.map(summary) },
}));
