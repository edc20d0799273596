//! Fuzz the llama.cpp importance-matrix reader (GGUF and legacy .dat) (see `quantscope::checkpoint::selfcheck`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quantscope::checkpoint::selfcheck::check_imatrix(data);
});
