//! Fuzz the PyTorch checkpoint reader: the pickle machine (every opcode, the allow-list, the
//! emulated rebuild calls), the zip and legacy containers, the views of storages, one-tensor
//! reads (plain and strided) and the page's builder (see `quantscope::checkpoint::selfcheck`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quantscope::checkpoint::selfcheck::check_file("fuzz.pt", data);
});
