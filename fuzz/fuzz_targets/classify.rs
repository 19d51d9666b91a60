//! The bash classifier never panics and never calls an unreadable command safe.
#![no_main]

#[path = "../properties.rs"]
mod properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::classify(data));
