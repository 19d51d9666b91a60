//! Fuzz redaction: never panics; redacting is idempotent; no detected secret
//! survives redaction, not even as the first 12 bytes of the value next to
//! its marker; the output layer's `clean` is idempotent too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plangate::redact::clean;
use plangate::scan::builtin_scanner;
use plangate::secrets::redact;

fuzz_target!(|data: &[u8]| {
    let Some(scanner) = builtin_scanner() else { return };
    let found = scanner.scan(data);
    let once = redact(data, &found);
    let again = redact(&once, &scanner.scan(&once));
    assert_eq!(once, again, "redaction is not idempotent");
    for f in &found {
        let secret = &data[f.start..f.end];
        if secret.len() >= 12 {
            assert!(
                !once.windows(secret.len()).any(|w| w == secret),
                "a detected secret survived redaction"
            );
        }
    }
    let c1 = clean(data).into_owned();
    let c2 = clean(&c1).into_owned();
    assert_eq!(c1, c2, "clean is not idempotent");
});
