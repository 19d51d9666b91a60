//! The encoded forms of a secret value the redaction layer masks besides
//! the value itself: its base64 text at every alignment, and the texts
//! whose base64 is masked too (the value reversed, its hex, the hex of its
//! reverse: one transform stacked on another).
//!
//! The closure is bounded: {value, reversed (bytes, characters)} ×
//! {as is, hex lower, hex upper}, each also in base64 (standard and
//! URL-safe, three alignments). Deeper stacks (base64 of base64, rot13,
//! compression) are not promised.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

/// The base64 text that encodes `value` wherever it sits in a longer encoded
/// stream: for each of the three alignments, the characters that depend on
/// `value`'s bytes only (standard and URL-safe alphabets).
pub fn base64(value: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for k in 0..3usize {
        let mut padded = vec![0u8; k];
        padded.extend_from_slice(value);
        let bits = 8 * padded.len();
        let first = (8 * k).div_ceil(6);
        let last = bits / 6; // exclusive: the last character also holds following bits
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let text = engine.encode(&padded);
            if let Some(piece) = text.as_bytes().get(first..last) {
                out.push(piece.to_vec());
            }
        }
    }
    out
}

/// The texts whose [`base64`] forms are masked for a secret `value`, each
/// with whether it is a hex text (its pieces are then twice as long): the
/// value, its bytes reversed, its characters reversed (when that differs),
/// and the hex of the value and of its reversed bytes, in lower and upper
/// case (base64 keeps case: both are needed).
pub fn base64_sources(value: &str) -> Vec<(Vec<u8>, bool)> {
    let bytes = value.as_bytes();
    let reversed: Vec<u8> = bytes.iter().rev().copied().collect();
    let rev_chars: String = value.chars().rev().collect();
    let mut out = vec![(bytes.to_vec(), false)];
    if rev_chars.as_bytes() != reversed.as_slice() {
        out.push((rev_chars.into_bytes(), false));
    }
    for b in [bytes, reversed.as_slice()] {
        out.push((hex::encode(b).into_bytes(), true));
        out.push((hex::encode_upper(b).into_bytes(), true));
    }
    out.push((reversed, false));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "ghp_Qx7Hv2pL9wW4mKa8Rt3Zc5Yb1Nd6Fe0Gh2Jk";

    /// Every base64 text of `source` a step may print: at each of three
    /// shifts, in both alphabets, padded or not, wrapped at 76 characters or not.
    fn printed(source: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for prefix in ["", "x", "xy"] {
            let mut data = prefix.as_bytes().to_vec();
            data.extend_from_slice(source);
            for engine in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ] {
                out.push(engine.encode(&data));
            }
        }
        out
    }

    fn covered(text: &str, needles: &[Vec<u8>]) -> bool {
        needles
            .iter()
            .any(|n| text.as_bytes().windows(n.len()).any(|w| w == n.as_slice()))
    }

    #[test]
    fn stacked_transforms_are_among_the_masked_forms() {
        let needles: Vec<Vec<u8>> = base64_sources(SECRET)
            .iter()
            .flat_map(|(s, _)| base64(s))
            .collect();
        let rev: String = SECRET.chars().rev().collect();
        let stacked = [
            rev.clone().into_bytes(),
            hex::encode(SECRET).into_bytes(),
            hex::encode_upper(SECRET).into_bytes(),
            hex::encode(&rev).into_bytes(),
            hex::encode_upper(&rev).into_bytes(),
        ];
        for source in &stacked {
            for text in printed(source) {
                assert!(covered(&text, &needles), "{text}");
            }
        }
        // Not a form: base64 of something else.
        assert!(!covered(
            &STANDARD_NO_PAD.encode("an ordinary line of log text"),
            &needles
        ));
    }

    #[test]
    fn reversed_characters_are_a_source_when_they_differ() {
        let s = base64_sources("pässwörd-Qx7Hv2");
        assert_eq!(s.len(), 7);
        assert_eq!(base64_sources(SECRET).len(), 6);
    }
}
