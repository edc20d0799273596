//! Fuzz the codecs' decoders: stored arrays of any content and length, for any codec of the
//! registry (see `quantscope::codec::selfcheck`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quantscope::codec::selfcheck::check_decode(data);
});
