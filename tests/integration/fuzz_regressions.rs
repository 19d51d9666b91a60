//! Replays every saved fuzz input through the property its fuzz target checks.
//!
//! `fuzz/regressions/<target>/` holds inputs that once crashed a target (copy
//! a new crash there: no code to add); `fuzz/seeds/<target>/` holds the seed
//! corpus. Both run on every `cargo test`, through the same functions the
//! cargo-fuzz targets call (`fuzz/properties.rs`), so a fixed crash stays fixed.

use std::path::{Path, PathBuf};

#[path = "../../fuzz/properties.rs"]
mod properties;

/// A fuzz target's property: panics when it fails.
type Property = fn(&[u8]);

/// Every fuzz target and the property it checks.
const TARGETS: &[(&str, Property)] = &[
    ("archive_names", properties::archive_names),
    ("classify", properties::classify),
    ("code", properties::code),
    ("envelope", properties::envelope),
    ("json", properties::json),
    ("plan", properties::plan),
    ("redact", properties::redact),
];

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

fn replay(folder: &str) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(folder);
    let mut count = 0;
    for (target, check) in TARGETS {
        for input in inputs(&root.join(target)) {
            let data = std::fs::read(&input).unwrap();
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(
                outcome.is_ok(),
                "fuzz {folder} input {} fails its property",
                input.display()
            );
            count += 1;
        }
    }
    count
}

#[test]
fn every_fuzz_regression_input_passes_its_property() {
    let n = replay("regressions");
    assert!(n >= 3, "the regression corpus went missing ({n} inputs)");
}

#[test]
fn every_fuzz_seed_passes_its_property() {
    let n = replay("seeds");
    assert!(n >= 50, "the seed corpus went missing ({n} inputs)");
}

#[test]
fn every_fuzz_target_has_its_property_here() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
    let mut names: Vec<String> = inputs(&dir)
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    let listed: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names, listed,
        "a fuzz target is missing from TARGETS here (or the other way round)"
    );
}
