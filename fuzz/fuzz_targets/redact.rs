//! Fuzz redaction: never panics; redacting is idempotent; no detected secret
//! survives redaction, not even as the first 12 bytes of the value next to
//! its marker; the output layer's `clean` is idempotent too.
#![no_main]

#[path = "../properties.rs"]
mod properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::redact(data));
