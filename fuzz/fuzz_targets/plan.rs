//! The plan loader never panics, whatever the bytes: it returns a plan or diagnostics with positions.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(diags) = plangate::plan::load_plan_str("fuzz.yaml", text) {
            assert!(!diags.is_empty());
        }
    }
});
