//! Fuzz `parse_envelope`: never panics; an accepted envelope, re-serialised,
//! parses again (strictly) to the same envelope; refusals carry one-line messages.
#![no_main]

#[path = "../properties.rs"]
mod properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::envelope(data));
