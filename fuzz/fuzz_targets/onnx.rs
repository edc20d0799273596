//! Fuzz the .onnx reader: the protobuf walk of the model, graph, nodes and initializers, the Q/DQ
//! analysis, one-tensor reads (raw, typed fields, int4) and the page's builder (see
//! `quantscope::checkpoint::selfcheck`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    quantscope::checkpoint::selfcheck::check_file("fuzz.onnx", data);
});
