//! Fuzz the native (memory-mapped) reader: the input's first byte picks the kind of file, the
//! rest is written to a folder of its own and opened as a checkpoint; every entry must read to
//! the same values whole, in windows of a few bytes (the windowed read of long ranges) and from
//! memory (see `quantscope::checkpoint::selfcheck::check_native`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quantscope::checkpoint::selfcheck::check_native_input(data);
});
