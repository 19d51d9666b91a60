//! Fuzz archive entry-name handling: never panics; an accepted name is
//! relative, has no `..`, no `.git` component and no NUL; a symlink target
//! resolved by name never climbs above the destination.
#![no_main]

#[path = "../properties.rs"]
mod properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::archive_names(data));
