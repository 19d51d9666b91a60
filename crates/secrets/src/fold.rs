//! The folded view: the text with every combining mark dropped and every
//! other character replaced by its compatibility decomposition (NFKD) less
//! its marks, with a way back to the original offsets.
//!
//! A secret printed with a mark on each character (`g̶h̶p̶_̶…`, U+0336, any
//! general category Mn/Me/Mc mark, several per character or on some only),
//! in fullwidth forms (`ｇｈｐ＿…`), mathematical alphanumerics (`𝐠𝐡𝐩`),
//! circled, superscript or small forms, or with accented letters standing
//! for plain ones (`ĝĥṕ`), reads as the secret: in this view it is the
//! secret. The redaction layer looks for the values it knows here (never the
//! rules, as in the compact view) and replaces a value found over its whole
//! original span, the marks that follow its last character included.
//!
//! Only the neighbourhood of the characters that fold is kept (see
//! [`CONTEXT`]): ordinary text with an accent here and there costs little,
//! and plain ASCII nothing.

use unicode_normalization::char::{decompose_compatible, is_combining_mark};

use super::view::View;

/// Bytes kept on each side of a character that folds: the longest piece of
/// a known value (16 hex digits) that a folded character can be part of
/// lies within this many bytes of it, the rest of the piece being plain
/// text that folds to itself.
pub const CONTEXT: usize = 16;

/// Between two kept stretches of the text: a byte no value or form holds
/// (never in UTF-8), so no match joins two stretches.
const GAP: u8 = 0xff;

/// The character at `i` (any UTF-8 character) and its length; None for a
/// byte that starts no valid character.
fn char_at(b: &[u8], i: usize) -> Option<(char, usize)> {
    let n = match *b.get(i)? {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let c = std::str::from_utf8(b.get(i..i + n)?).ok()?.chars().next()?;
    Some((c, n))
}

/// Hangul syllables decompose canonically into their letters: a different
/// spelling of the same text, not a decoration, and common in Korean text.
fn is_hangul_syllable(c: char) -> bool {
    ('\u{ac00}'..='\u{d7a3}').contains(&c)
}

/// What `c` folds to (appended to `out`): nothing for a mark or a blank,
/// else its compatibility decomposition less marks and blanks. Returns
/// whether that differs from `c`.
fn fold_char(c: char, out: &mut String) -> bool {
    if c.is_ascii() {
        if c.is_ascii_whitespace() {
            return true;
        }
        out.push(c);
        return false;
    }
    if is_combining_mark(c) || c.is_whitespace() {
        return true;
    }
    if is_hangul_syllable(c) {
        out.push(c);
        return false;
    }
    let from = out.len();
    let mut same = true;
    decompose_compatible(c, |d| {
        if d != c {
            same = false;
        }
        if !is_combining_mark(d) && !d.is_whitespace() {
            out.push(d);
        }
    });
    if same {
        out.truncate(from);
        out.push(c);
    }
    !same
}

/// Whether the non-ASCII character `c` folds to something else.
fn folds(c: char) -> bool {
    !c.is_ascii() && fold_char(c, &mut String::new())
}

/// `value` folded as the view folds text ([`folded`]: marks and blanks
/// dropped, compatibility characters decomposed), when that differs from it
/// for some character beyond ASCII: the form a known value with such
/// characters is looked for in the folded view.
pub fn fold_value(value: &str) -> Option<String> {
    if !value.chars().any(folds) {
        return None;
    }
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        fold_char(c, &mut out);
    }
    Some(out)
}

/// Where in `b` characters fold: each one's byte span, in order.
fn folding_chars(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // Runs of ASCII are skipped a machine word at a time by the check.
        if b.get(i).is_some_and(u8::is_ascii) {
            i += 1;
            continue;
        }
        match char_at(b, i) {
            Some((c, n)) => {
                if folds(c) {
                    out.push((i, i + n));
                }
                i += n;
            }
            None => i += 1,
        }
    }
    out
}

fn back_to_char(b: &[u8], mut i: usize) -> usize {
    while i > 0 && b.get(i).is_some_and(|&c| (0x80..0xc0).contains(&c)) {
        i -= 1;
    }
    i
}

fn on_to_char(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|&c| (0x80..0xc0).contains(&c)) {
        i += 1;
    }
    i.min(b.len())
}

/// `b` folded: in each stretch of `b` around characters that fold
/// ([`CONTEXT`] bytes either side, stretches that touch joined), combining
/// marks and whitespace dropped and every other character replaced by its
/// compatibility decomposition less its marks; stretches separated by a byte
/// no value holds. A mark maps back with the character before it, so a
/// value found here is replaced with the marks on its last character. None
/// when nothing in `b` folds (all of plain ASCII text, most other text).
pub fn folded(b: &[u8]) -> Option<View> {
    if b.is_ascii() {
        return None;
    }
    let chars = folding_chars(b);
    if chars.is_empty() {
        return None;
    }
    let mut stretches: Vec<(usize, usize)> = Vec::new();
    for (s, e) in chars {
        let s = back_to_char(b, s.saturating_sub(CONTEXT));
        let e = on_to_char(b, e + CONTEXT);
        match stretches.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => stretches.push((s, e)),
        }
    }
    let mut v = View::decoded(stretches.iter().map(|(s, e)| e - s + 1).sum());
    let mut buf = String::new();
    for (k, &(s, e)) in stretches.iter().enumerate() {
        if k > 0 {
            v.push_unit(&[GAP], s, s);
        }
        let mut i = s;
        let mut opened = false;
        while i < e {
            let Some((c, n)) = char_at(b, i) else {
                // A byte that is no character stays as it is.
                v.push_unit(b.get(i..=i).unwrap_or_default(), i, i + 1);
                opened = true;
                i += 1;
                continue;
            };
            buf.clear();
            fold_char(c, &mut buf);
            if c.is_whitespace() {
                // Dropped, as the compact view drops it; masked only between
                // two characters of a value.
            } else if buf.is_empty() {
                // A mark or a blank: shown with the character before it.
                if opened {
                    v.extend_last(i + n);
                }
            } else {
                v.push_unit(buf.as_bytes(), i, i + n);
                opened = true;
            }
            i += n;
        }
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(b: &str) -> String {
        folded(b.as_bytes()).map_or_else(
            || b.to_owned(),
            |v| String::from_utf8_lossy(&v.text).into_owned(),
        )
    }

    #[test]
    fn marks_and_compatibility_forms_fold() {
        assert_eq!(shown("a\u{336}b\u{336}c\u{336}"), "abc");
        assert_eq!(shown("ｇｈｐ＿Ｑｘ７"), "ghp_Qx7");
        assert_eq!(shown("𝐠𝐡𝐩_𝑸𝒙𝟕"), "ghp_Qx7");
        assert_eq!(shown("ⓖⓗⓟ"), "ghp");
        assert_eq!(shown("ĝĥṕ"), "ghp");
        assert_eq!(shown("x²﹏ｙ"), "x2_y");
        assert_eq!(shown("a b\u{3000}c"), "abc");
    }

    #[test]
    fn plain_text_has_no_folded_view() {
        assert!(folded(b"plain ascii").is_none());
        assert!(folded("漢字テキスト — 😀 한국어".as_bytes()).is_none());
    }

    #[test]
    fn a_span_covers_the_marks_of_its_last_character() {
        let t = "k=a\u{336}b\u{301}\u{332}c\u{20d2} rest";
        let v = folded(t.as_bytes()).unwrap_or_else(|| panic!("folds"));
        let at = v
            .text
            .windows(3)
            .position(|w| w == b"abc")
            .unwrap_or_else(|| panic!("abc"));
        let (s, e) = v.span(at, at + 3);
        assert_eq!(&t[s..e], "a\u{336}b\u{301}\u{332}c\u{20d2}");
    }
}
