//! Every reference case produced by PyTorch 2.15 (`golden/torch/cases.json`) must pass within
//! its tolerance.
mod common;

#[test]
fn torch_golden_cases() {
    common::run_family("torch", common::run_standard);
}
