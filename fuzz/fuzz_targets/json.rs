//! Fuzz `parse_json`: never panics; an accepted value, re-serialised, parses
//! again to the same value.
#![no_main]

#[path = "../properties.rs"]
mod properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::json(data));
