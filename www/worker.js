// The explorer's Web Worker: it owns the WebAssembly instance and the engine (loaded tensors,
// observer runs), so that loading and observing never block the page. The protocol, the queue
// and the restart after a panic are rpc.js's; every operation is engine.js's. AdaRound starts in
// order but does not hold the queue: the explorer stays live while it learns; so does ranking a
// checkpoint (the model view) and comparing two (the compare view).
import init, { warmUp } from './pkg/quantscope.js';
import { wasmUrl } from './lib/wasm-flavour.js';
import { Engine } from './lib/engine.js';
import { serve } from './lib/rpc.js';

serve(async () => {
  await init({ module_or_path: wasmUrl() }); // the SIMD128 build, or the baseline one without SIMD
  warmUp(); // the hot kernels optimised before the first tensor (src/warm.rs)
  return new Engine();
}, { concurrent: ['adaround', 'rankModel', 'diff', 'diffTensor'] });
