//! Offline structural verification: GitHub / npm CRC32-base62 token checksums and JWT headers.

use base64::Engine as _;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
}

static CRC_TABLE: [u32; 256] = crc_table();

/// CRC-32 (IEEE 802.3, as zlib's `crc32`).
pub(super) fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc = CRC_TABLE[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

/// `n` in base62 (0-9A-Za-z), left-padded with '0' to 6 characters.
pub(super) fn base62_6(mut n: u32) -> [u8; 6] {
    let mut out = [b'0'; 6];
    let mut i = 6;
    while n > 0 && i > 0 {
        i -= 1;
        out[i] = BASE62[(n % 62) as usize];
        n /= 62;
    }
    out
}

/// Verify the checksum of a classic GitHub (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`) or npm
/// (`npm_`) token: the part after the last `_` ends with 6 base62 chars that encode the CRC32
/// of the rest of that part. Fine-grained `github_pat_` tokens carry no such checksum (their
/// rule does not ask for one; `tests/fixtures/secrets/real_world/`).
pub(super) fn verify_crc_token(token: &[u8]) -> bool {
    let body = match token.iter().rposition(|&b| b == b'_') {
        Some(i) => &token[i + 1..],
        None => return false,
    };
    if body.len() <= 6 || !body.iter().all(|b| b.is_ascii_alphanumeric()) {
        return false;
    }
    let (payload, check) = body.split_at(body.len() - 6);
    base62_6(crc32(payload)) == check
}

/// Decode base64 in any common flavour (standard / URL-safe, padded or not).
pub(super) fn decode_b64(s: &[u8]) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let trimmed: &[u8] = {
        let mut end = s.len();
        while end > 0 && s[end - 1] == b'=' {
            end -= 1;
        }
        &s[..end]
    };
    STANDARD_NO_PAD
        .decode(trimmed)
        .or_else(|_| URL_SAFE_NO_PAD.decode(trimmed))
        .or_else(|_| STANDARD.decode(s))
        .or_else(|_| URL_SAFE.decode(s))
        .ok()
}

/// A JWT whose header (first dot-separated part) decodes to a JSON object with "alg".
pub(super) fn valid_jwt(token: &[u8]) -> bool {
    let header = match token.split(|&b| b == b'.').next() {
        Some(h) => h,
        None => return false,
    };
    match decode_b64(header) {
        Some(h) => {
            let t = String::from_utf8_lossy(&h);
            let t = t.trim();
            t.starts_with('{') && t.ends_with('}') && t.contains("\"alg\"")
        }
        None => false,
    }
}

#[cfg(test)]
pub(crate) fn make_crc_token(prefix: &str, payload: &str) -> String {
    let sum = base62_6(crc32(payload.as_bytes()));
    format!("{prefix}{payload}{}", String::from_utf8_lossy(&sum))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_known_vector() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn base62_padding() {
        assert_eq!(&base62_6(0), b"000000");
        assert_eq!(&base62_6(61), b"00000z");
        assert_eq!(&base62_6(62), b"000010");
    }

    #[test]
    fn github_checksum_valid_and_invalid() {
        let good = make_crc_token("ghp_", "R7vT2qLmX9kWb4NcZp1sYdH8jFa3Ue");
        assert_eq!(good.len(), 40);
        assert!(verify_crc_token(good.as_bytes()));
        // flip one payload character: checksum must fail
        let mut bad = good.clone().into_bytes();
        bad[10] = if bad[10] == b'a' { b'b' } else { b'a' };
        assert!(!verify_crc_token(&bad));
        // random tail
        assert!(!verify_crc_token(
            b"ghp_R7vT2qLmX9kWb4NcZp1sYdH8jFa3UeAAAAAA"
        ));
        // npm uses the same scheme
        let npm = make_crc_token("npm_", "Q2wE3rT4yU5iO6pA7sD8fG9hJ0kL1z");
        assert!(verify_crc_token(npm.as_bytes()));
        // a real, leaked fine-grained PAT (Kingfisher's github.yml example) fails the classic
        // scheme: such tokens have no checksum to verify
        assert!(!verify_crc_token(
            b"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"
        ));
        // a real classic token (Kingfisher's github.yml example) passes it
        assert!(verify_crc_token(
            b"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"
        ));
    }

    #[test]
    fn jwt_header() {
        let jwt = b"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIn0.abc";
        assert!(valid_jwt(jwt));
        assert!(!valid_jwt(b"eyJub3RhbGciOjF9.eyJzdWIiOiIxIn0.abc"));
    }
}
