//! Running the built `quantscope` binary, shared by the CLI test files.

use std::process::Command;

/// Run `quantscope args…`: its exit code (−1 when killed by a signal), stdout and stderr.
pub fn quantscope(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_quantscope"))
        .args(args)
        .output()
        .expect("run quantscope");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
