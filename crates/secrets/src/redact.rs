//! Fingerprinting, redaction and binary detection helpers.

use sha2::{Digest, Sha256};

use super::Finding;

/// Stable fingerprint of a secret value: hex sha256 of the bytes, first 32 hex chars.
pub fn fingerprint(secret: &[u8]) -> String {
    let digest = Sha256::digest(secret);
    let mut h = hex::encode(digest);
    h.truncate(32);
    h
}

/// `bytes` with every finding's secret replaced by `[REDACTED:<rule>]`. Overlapping or
/// out-of-range findings are handled without panicking; nothing of a secret is kept.
pub fn redact(bytes: &[u8], findings: &[Finding]) -> Vec<u8> {
    let mut spans: Vec<(usize, usize, &str)> = findings
        .iter()
        .filter(|f| f.start < f.end && f.start < bytes.len())
        .map(|f| (f.start, f.end.min(bytes.len()), f.rule.as_str()))
        .collect();
    spans.sort_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
    let mut out = Vec::with_capacity(bytes.len());
    let mut pos = 0usize;
    for (s, e, rule) in spans {
        if e <= pos {
            continue; // fully inside an already redacted span
        }
        if s >= pos {
            out.extend_from_slice(&bytes[pos..s]);
            out.extend_from_slice(b"[REDACTED:");
            out.extend_from_slice(rule.as_bytes());
            out.push(b']');
        }
        // overlapping tail: extend the previous redaction over it
        pos = e;
    }
    out.extend_from_slice(&bytes[pos.min(bytes.len())..]);
    out
}

/// NUL byte in the first 8 KiB, or text so broken (many control bytes / invalid UTF-8)
/// that the file is clearly binary: callers skip it.
pub fn looks_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(8192)];
    if head.is_empty() {
        return false;
    }
    if memchr::memchr(0, head).is_some() {
        return true;
    }
    let ctrl = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c | 0x1b))
        .count();
    if ctrl * 100 > head.len() * 10 {
        return true;
    }
    if std::str::from_utf8(head).is_err() {
        // Latin-1 text is fine; reject when invalid sequences are everywhere.
        let mut invalid = 0usize;
        let mut rest = head;
        while let Err(e) = std::str::from_utf8(rest) {
            match e.error_len() {
                Some(n) => {
                    invalid += n;
                    rest = &rest[e.valid_up_to() + n..];
                }
                None => break, // truncated at the 8 KiB cut
            }
        }
        return invalid * 100 > head.len() * 30;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_stable() {
        let a = fingerprint(b"ghp_secret");
        assert_eq!(a, fingerprint(b"ghp_secret"));
        assert_eq!(a.len(), 32);
        assert_ne!(a, fingerprint(b"ghp_secreu"));
        // sha256("abc") prefix
        assert_eq!(fingerprint(b"abc"), "ba7816bf8f01cfea414140de5dae2223");
    }

    #[test]
    fn binary_detection() {
        assert!(looks_binary(b"abc\0def"));
        assert!(!looks_binary(b"plain text\nline two\n"));
        assert!(!looks_binary("caf\u{e9} \u{2014} ok".as_bytes()));
        assert!(looks_binary(&[
            0xff, 0xfe, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
        ]));
        assert!(!looks_binary(b""));
    }

    #[test]
    fn redact_overlaps_and_bounds() {
        let f = |s, e| Finding {
            rule: "r".into(),
            start: s,
            end: e,
            line: 1,
            column: 1,
            confidence: 1.0,
            fingerprint: String::new(),
        };
        let out = redact(b"0123456789", &[f(2, 5), f(4, 7), f(9, 99)]);
        assert_eq!(out, b"01[REDACTED:r]78[REDACTED:r]");
    }
}
