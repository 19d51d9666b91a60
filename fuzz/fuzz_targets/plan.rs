//! The plan loader never panics, whatever the bytes: it returns a plan or diagnostics with positions.
#![no_main]

#[path = "../properties.rs"]
mod properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::plan(data));
