//! Fuzz the .safetensors readers: the whole-file reader, the catalogue listing and one-tensor reads,
//! and the page's builder (see `quantscope::checkpoint::selfcheck`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quantscope::checkpoint::selfcheck::check_file("fuzz.safetensors", data);
});
