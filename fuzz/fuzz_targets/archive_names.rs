//! Fuzz archive entry-name handling: never panics; an accepted name is
//! relative, has no `..`, no `.git` component and no NUL; a symlink target
//! resolved by name never climbs above the destination.
#![no_main]

use std::path::{Component, Path};

use libfuzzer_sys::fuzz_target;
use plangate::tools::archive::names::{lexical_target, normalize, shown};

fuzz_target!(|data: &[u8]| {
    let (name, target) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &data[..0]),
    };
    let _ = shown(name);
    if let Ok(Some(p)) = normalize(name) {
        assert!(p.is_relative(), "{p:?}");
        for c in p.components() {
            assert!(matches!(c, Component::Normal(_)), "{p:?}");
            let s = c.as_os_str().as_encoded_bytes();
            assert!(!s.eq_ignore_ascii_case(b".git"), "{p:?}");
            assert!(!s.contains(&0), "{p:?}");
        }
        let dir = p.parent().unwrap_or(Path::new(""));
        if let Some(t) = lexical_target(dir, target) {
            assert!(t.is_relative(), "{t:?}");
            assert!(
                t.components().all(|c| matches!(c, Component::Normal(_))),
                "{t:?}"
            );
        }
    }
});
