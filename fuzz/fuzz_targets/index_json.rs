//! Fuzz the `model.safetensors.index.json` reader: the index parser, then a catalogue of the
//! index with one real shard beside it (`model-00001-of-00002.safetensors`), listed natively
//! and by the page's builder.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quantscope::checkpoint::selfcheck::check_index(data);
});
