//! Finding JSON in prose: top-level `{…}`/`[…]` regions (string-aware, linear),
//! the byte scanner they share with the envelope parser, and the checks around
//! a found value (a UTF-8 BOM, a single fenced block, junk glued after it).

use super::rejections::{pending, pos};
use super::{Category, Rejection};

pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// A top-level balanced region found by [`scan_regions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    /// Byte offset of the opening `{` or `[`.
    pub start: usize,
    /// Byte offset just past the matching closer, or the text length when unclosed.
    pub end: usize,
    /// Whether the region was closed before the end of the text.
    pub closed: bool,
}

/// Finds top-level regions that start with one of `openers` (`{`, `[`), from `from`.
///
/// Outside a region the text is prose: quotes and closers there mean nothing.
/// Inside a region, double-quoted strings are honoured (with `\` escapes), so
/// braces inside strings do not count. Iterative and linear.
pub(crate) fn scan_regions(text: &str, from: usize, openers: &[u8]) -> Vec<Region> {
    let bytes = text.as_bytes();
    let mut regions = Vec::new();
    let mut i = from;
    while i < bytes.len() {
        let b = bytes.get(i).copied().unwrap_or(0);
        // `{\"` is an escaped JSON text inside a string, not an object.
        if !openers.contains(&b) || bytes.get(i + 1) == Some(&b'\\') {
            i += 1;
            continue;
        }
        let start = i;
        let mut depth: usize = 0;
        let mut in_str = false;
        let mut closed_at = None;
        while i < bytes.len() {
            let c = bytes.get(i).copied().unwrap_or(0);
            if in_str {
                match c {
                    b'\\' => i += 2,
                    b'"' => {
                        in_str = false;
                        i += 1;
                    }
                    _ => i = skip_plain(bytes, i + 1, bytes.len()),
                }
                continue;
            }
            match c {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        closed_at = Some(i + 1);
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        match closed_at {
            Some(end) => regions.push(Region {
                start,
                end,
                closed: true,
            }),
            None => {
                regions.push(Region {
                    start,
                    end: bytes.len(),
                    closed: false,
                });
                break;
            }
        }
    }
    regions
}

/// First offset in `from..limit` holding `"`, `\\` or a byte below 0x20 (or `limit`).
/// Eight bytes at a time (SWAR): string bodies are most of an envelope.
#[inline]
pub(crate) fn skip_plain(bytes: &[u8], from: usize, limit: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let limit = limit.min(bytes.len());
    let mut i = from;
    while i + 8 <= limit {
        let Some(chunk) = bytes
            .get(i..i + 8)
            .and_then(|c| <[u8; 8]>::try_from(c).ok())
        else {
            break;
        };
        let x = u64::from_le_bytes(chunk);
        let q = x ^ (ONES * u64::from(b'"'));
        let bs = x ^ (ONES * u64::from(b'\\'));
        let special = (q.wrapping_sub(ONES) & !q)
            | (bs.wrapping_sub(ONES) & !bs)
            | (x.wrapping_sub(ONES * 0x20) & !x);
        if special & HIGH != 0 {
            break;
        }
        i += 8;
    }
    while i < limit {
        match bytes.get(i) {
            Some(b'"' | b'\\' | 0x00..=0x1f) | None => return i,
            Some(_) => i += 1,
        }
    }
    limit
}

/// Text right after a JSON value found in prose that shows the value is not complete:
/// a word glued to its closer (`{"a":2}foo`) or JSON punctuation after it
/// (`{"key": "value"}, "key2": "value2"}` — closed too early). Never cut off silently.
pub(crate) fn junk_after(text: &str, end: usize) -> Option<Rejection> {
    let rest = text.get(end..)?;
    let first = rest.chars().next()?;
    let lc = pos(end.saturating_sub(1));
    if first.is_alphanumeric() || first == '_' {
        return Some(pending(
            end,
            Category::Syntax,
            format!(
                "text is glued to the JSON value that ends at {lc}: separate the JSON from prose (a ```json block is best)"
            ),
        ));
    }
    let t = rest.trim_start();
    let next = t.chars().next()?;
    if matches!(next, ',' | ':' | '}' | ']' | '"') {
        let at = end + (rest.len() - t.len());
        return Some(pending(
            at,
            Category::Syntax,
            format!(
                "JSON-looking '{next}' follows the value that ends at {lc}: it looks closed too early or continued; answer with one complete JSON value"
            ),
        ));
    }
    None
}

/// Byte offset of the first char after a UTF-8 BOM.
pub(crate) fn after_bom(text: &str) -> usize {
    if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    }
}

/// If the trimmed answer is exactly one fenced block (``` or ~~~, any info string),
/// the byte range of its content.
pub(crate) fn single_fence(text: &str) -> Option<(usize, usize)> {
    let lead = text.len()
        - text
            .trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
            .len();
    let body = text.get(lead..)?.trim_end();
    let fch = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let flen = body.chars().take_while(|c| *c == fch).count();
    if flen < 3 {
        return None;
    }
    let first_nl = body.find('\n')?;
    let info = body.get(flen..first_nl)?;
    if info.contains(fch) && fch == '`' {
        return None;
    }
    let last_line_start = body.rfind('\n')? + 1;
    let last = body.get(last_line_start..)?.trim();
    if last.len() < flen || !last.chars().all(|c| c == fch) || last_line_start <= first_nl {
        return None;
    }
    let inner_start = lead + first_nl + 1;
    let inner_end = lead + last_line_start;
    let inner = text.get(inner_start..inner_end)?;
    // A second fence line inside means more than one block.
    let nested = inner.lines().any(|l| {
        let t = l.trim();
        t.len() >= 3 && (t.starts_with("```") || t.starts_with("~~~"))
    });
    if nested {
        return None;
    }
    Some((inner_start, inner_end))
}

pub(crate) fn trimmed_range(text: &str, start: usize, end: usize) -> (usize, usize) {
    let s = text.get(start..end).unwrap_or("");
    let lead = s.len() - s.trim_start_matches([' ', '\t', '\n', '\r']).len();
    let t = s.trim_end_matches([' ', '\t', '\n', '\r']);
    (start + lead, start + t.len().max(lead))
}

/// Whether a region that failed to parse still looks like JSON (and so counts as a candidate).
pub(crate) fn json_looking(text: &str, r: &Region) -> bool {
    let bytes = text.as_bytes();
    if bytes.get(r.start) == Some(&b'{') {
        return true;
    }
    let mut i = r.start + 1;
    while bytes.get(i).is_some_and(|b| is_ws(*b)) {
        i += 1;
    }
    if matches!(
        bytes.get(i),
        Some(b'{' | b'[' | b'"' | b'\'' | b'-' | b'+' | b'.' | b'0'..=b'9')
    ) {
        return true;
    }
    let rest = text.get(i..r.end).unwrap_or("");
    [
        "true", "false", "null", "True", "False", "None", "NaN", "Infinity",
    ]
    .iter()
    .any(|w| {
        rest.strip_prefix(w)
            .is_some_and(|after| after.starts_with([',', ']', ' ', '\n', '\t', '\r']))
    })
}
