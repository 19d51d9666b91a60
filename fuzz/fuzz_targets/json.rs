//! Fuzz `parse_json`: never panics; an accepted value, re-serialised, parses
//! again to the same value.
#![no_main]

use plangate::guard::json::parse_json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(v) = parse_json(text, None) {
        let again = serde_json::to_string(&v).expect("serialise");
        let back = parse_json(&again, None).expect("re-serialised value must parse");
        assert_eq!(back, v);
    }
});
