//! Fuzz the quantized Hugging Face layouts: a config.json and a .safetensors file, every weight decoded through its codec (see `quantscope::checkpoint::selfcheck`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quantscope::checkpoint::selfcheck::check_layout(data);
});
