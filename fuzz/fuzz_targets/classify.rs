//! The bash classifier never panics and never calls an unreadable command safe.
#![no_main]
use libfuzzer_sys::fuzz_target;
use plangate::policy::Risk;
use plangate::policy::classify::{ClassifyContext, classify_bash};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(cmd) = std::str::from_utf8(data) {
        let ctx = ClassifyContext {
            workspace: Path::new("/work/ws"),
            working_dir: Path::new("/work/ws"),
            home: Some(Path::new("/home/ci")),
        };
        let c = classify_bash(cmd, &ctx);
        if c.unclassifiable.is_some() {
            assert_eq!(c.risk, Risk::Dangerous);
        }
        if c.blocked.is_some() {
            assert_eq!(c.blocked.as_deref(), Some(c.reason.as_str()));
        }
    }
});
