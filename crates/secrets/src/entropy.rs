//! Shannon entropy and simple character-class statistics of candidate secrets.

/// Shannon entropy of `bytes` in bits per byte (0 for empty input).
pub fn shannon(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[b as usize] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// Number of character classes present: lowercase, uppercase, digit, other symbol
/// (`_`, `-` and `.` are not counted as symbols: they are identifier-ish).
pub(super) fn classes(bytes: &[u8]) -> usize {
    let (mut l, mut u, mut d, mut s) = (false, false, false, false);
    for &b in bytes {
        match b {
            b'a'..=b'z' => l = true,
            b'A'..=b'Z' => u = true,
            b'0'..=b'9' => d = true,
            b'_' | b'-' | b'.' => {}
            _ => s = true,
        }
    }
    [l, u, d, s].iter().filter(|&&x| x).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_values() {
        assert_eq!(shannon(b""), 0.0);
        assert_eq!(shannon(b"aaaa"), 0.0);
        assert!((shannon(b"ab") - 1.0).abs() < 1e-9);
        assert!((shannon(b"abcd") - 2.0).abs() < 1e-9);
        assert!((shannon(b"0123456789abcdef") - 4.0).abs() < 1e-9);
        assert!(shannon(b"wJalrXUtnFEMIK7MDENGbPxRfiCYzz9q8Lk3") > 4.0);
    }

    #[test]
    fn class_counts() {
        assert_eq!(classes(b"abc"), 1);
        assert_eq!(classes(b"my_secret_value"), 1);
        assert_eq!(classes(b"Abc1"), 3);
        assert_eq!(classes(b"Abc1!"), 4);
    }
}
