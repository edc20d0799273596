//! The Python module's committed type stubs (`python/src/quantscope/_native.pyi`) are the ones
//! the registries' parameter declarations generate (`quantscope::stubs`): a new observer, format
//! or parameter changes them, and the test says how to rewrite the file.

use std::path::Path;

#[test]
fn the_committed_python_stub_is_the_generated_one() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/src/quantscope/_native.pyi");
    let generated = quantscope::stubs::python_stub();
    if std::env::var_os("QUANTSCOPE_WRITE_STUBS").is_some() {
        std::fs::write(&path, &generated).expect("write the stub");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or(
                committed.lines().count().min(generated.lines().count()),
                |i| i,
            )
            + 1;
        panic!(
            "{} differs from the generated stub (first at line {line}): run \
             `QUANTSCOPE_WRITE_STUBS=1 cargo test --test python_stub` and commit it",
            path.display()
        );
    }
}

#[test]
fn every_observer_and_format_has_its_overload_and_parameters() {
    let stub = quantscope::stubs::python_stub();
    for spec in quantscope::registry::observers() {
        assert!(
            stub.contains(&format!("observer: Literal[{:?}]", spec.id)),
            "{}",
            spec.id
        );
        for p in &spec.params {
            assert!(
                stub.contains(&format!("- ``{}``: {}", p.name, p.doc)),
                "{}.{}",
                spec.id,
                p.name
            );
        }
    }
    for entry in quantscope::codec::codecs() {
        assert!(
            stub.contains(&format!("codec: Literal[{:?}]", entry.id)),
            "{}",
            entry.id
        );
    }
}
