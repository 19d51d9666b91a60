//! Fuzz `parse_code`: it never panics, every rejection is well-formed, and an
//! accepted value round-trips through a fresh fence.
#![no_main]

#[path = "../properties.rs"]
mod properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::code(data));
