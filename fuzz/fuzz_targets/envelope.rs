//! Fuzz `parse_envelope`: never panics; an accepted envelope, re-serialised,
//! parses again (strictly) to the same envelope; refusals carry one-line messages.
#![no_main]

use plangate::guard::envelope::{parse_envelope, tier3_failure, Tier};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_envelope(text) {
        Ok((env, _)) => {
            let again = serde_json::to_string(&env).expect("serialise");
            let (back, tier) = parse_envelope(&again).expect("re-serialised envelope must parse");
            assert_eq!(back, env);
            assert_eq!(tier, Tier::Strict);
        }
        Err(r) => {
            assert!(!r.is_empty());
            assert!(r.iter().all(|x| !x.message.contains('\n')));
            let _ = tier3_failure(&r);
        }
    }
});
