//! The quantscope command-line interface.
fn main() {
    println!("quantscope {}", env!("CARGO_PKG_VERSION"));
}
