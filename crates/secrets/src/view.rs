//! The text as it will be shown: control sequences removed, with a way back
//! to the original byte offsets.
//!
//! A terminal, anstream's stripping (stderr that is not a terminal), an XML
//! writer dropping control characters, or a JSON reader decoding `\u001b`
//! all join what a control sequence split: `ghp_ab<ESC>[0mcd…` is shown as
//! `ghp_abcd…`. The redaction layer scans these views besides the raw bytes,
//! and replaces a secret found in a view over its whole original span
//! (control bytes included), so nothing downstream can reassemble it; the
//! scan that reports findings ([`super::Scanner::scan_shown`]) reads them too,
//! so such a secret is counted once, with its rule.
//!
//! Removed: ANSI escape sequences (CSI, OSC, DCS/SOS/PM/APC strings, two-byte
//! and `nF` escapes; 7-bit and C1 forms), every other C0 control but `\n`
//! and `\t` (NUL, BEL, CR, backspace, …), DEL and C1 controls, raw or
//! JSON-escaped (`\u001b`, `\b`, `\r`, `\f`), and the characters nothing
//! shows ([`invisible`]: zero-width space, joiners, word joiner, BOM, soft
//! hyphen, bidirectional marks, tags, variation selectors and every other
//! Unicode format character; raw or JSON-escaped, surrogate pairs included).
//! The overstrike view also lets a backspace erase the character before it,
//! as a terminal shows it.

/// One lexical unit of the input: a byte (or a JSON escape) of text, or a control.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// Shown text; the value is the byte for escape-sequence parsing
    /// (`0xff` for a multi-byte escape that is not a control).
    Text(u8),
    /// A control (C0, DEL, C1), raw or JSON-escaped.
    Ctl(u8),
}

const ESC: u8 = 0x1b;
/// The unit of an [`invisible`] character: dropped like a control byte.
const HIDDEN: u8 = 0;
const BS: u8 = 0x08;

fn is_ctl(v: u32) -> bool {
    (v < 0x20 && v != u32::from(b'\n') && v != u32::from(b'\t')) || (0x7f..=0x9f).contains(&v)
}

/// Characters a reader does not see: Unicode's default-ignorable code
/// points and its format characters (general category Cf). A secret split by
/// one of them is shown whole, so the views drop them like control bytes.
const INVISIBLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

/// Whether the code point `v` is one nobody sees ([`INVISIBLE`]).
pub(crate) fn invisible(v: u32) -> bool {
    let k = INVISIBLE.partition_point(|&(_, hi)| hi < v);
    INVISIBLE.get(k).is_some_and(|&(lo, _)| lo <= v)
}

/// The UTF-8 character of more than one byte at `i` (a valid one): its
/// code point and length.
fn char_at(b: &[u8], i: usize) -> Option<(u32, usize)> {
    let n = match *b.get(i)? {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let c = std::str::from_utf8(b.get(i..i + n)?).ok()?.chars().next()?;
    Some((u32::from(c), n))
}

/// A JSON escape `\uXXXX` at `i` (a surrogate pair as one): its code point
/// and where it ends.
fn json_escape(b: &[u8], i: usize) -> Option<(u32, usize)> {
    let v = hex4(b.get(i + 2..i + 6))?;
    if (0xD800..0xDC00).contains(&v)
        && b.get(i + 6..i + 8) == Some(b"\\u".as_slice())
        && let Some(lo) = hex4(b.get(i + 8..i + 12)).filter(|lo| (0xDC00..0xE000).contains(lo))
    {
        return Some((0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00), i + 12));
    }
    Some((v, i + 6))
}

fn hex4(b: Option<&[u8]>) -> Option<u32> {
    let s = std::str::from_utf8(b?).ok()?;
    u32::from_str_radix(s, 16).ok()
}

/// The unit at `i` and where it ends.
fn unit_at(b: &[u8], i: usize) -> Option<(Unit, usize)> {
    let c = *b.get(i)?;
    let next = b.get(i + 1).copied();
    Some(match (c, next) {
        (b'\\', Some(b'u')) => match json_escape(b, i) {
            Some((v, end)) if is_ctl(v) => (Unit::Ctl(u8::try_from(v).unwrap_or(0)), end),
            Some((v, end)) if invisible(v) => (Unit::Ctl(HIDDEN), end),
            Some((_, end)) => (Unit::Text(0xff), end),
            None => (Unit::Text(b'\\'), i + 1),
        },
        (b'\\', Some(b'b')) => (Unit::Ctl(BS), i + 2),
        (b'\\', Some(b'f')) => (Unit::Ctl(0x0c), i + 2),
        (b'\\', Some(b'r')) => (Unit::Ctl(b'\r'), i + 2),
        (b'\\', Some(e)) => (Unit::Text(e), i + 2),
        (0xc2, Some(v @ 0x80..=0x9f)) => (Unit::Ctl(v), i + 2),
        (c, _) if is_ctl(u32::from(c)) => (Unit::Ctl(c), i + 1),
        // A whole UTF-8 character: its continuation bytes are no C1 controls.
        (0xc2..=0xf4, _) => match char_at(b, i) {
            Some((v, n)) if invisible(v) => (Unit::Ctl(HIDDEN), i + n),
            Some((_, n)) => (Unit::Text(0xff), i + n),
            None => (Unit::Text(c), i + 1),
        },
        (c, _) => (Unit::Text(c), i + 1),
    })
}

/// Whether `b` holds anything a view would remove (cheap; most text does not).
pub(crate) fn has_controls(b: &[u8]) -> bool {
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' if matches!(b.get(i + 1), Some(b'u' | b'b' | b'f' | b'r')) => return true,
            0xc2..=0xf4 if let Some((v, n)) = char_at(b, i) => {
                if is_ctl(v) || invisible(v) {
                    return true;
                }
                i += n;
                continue;
            }
            c if is_ctl(u32::from(c)) => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// Whether `b` holds a backspace (raw or JSON-escaped).
pub(crate) fn has_backspace(b: &[u8]) -> bool {
    memchr::memchr(BS, b).is_some()
        || memchr::memmem::find(b, b"\\b").is_some()
        || memchr::memmem::find(b, b"\\u0008").is_some()
}

/// A view of some bytes and the way back to them.
pub struct View {
    /// The shown text.
    pub text: Vec<u8>,
    /// `(view offset, original offset)` where the view stops following the
    /// original one to one (sorted by view offset).
    shifts: Vec<(usize, usize)>,
    /// Where in the original the last byte of the view came from (+1).
    next_orig: usize,
    /// A decoded view ([`crate::decode`]): the original span of each byte
    /// (empty for the other views, which map back by `shifts`).
    units: Vec<(usize, usize)>,
}

impl View {
    /// An empty decoded view (its bytes pushed by [`View::push_unit`]).
    pub(crate) fn decoded(capacity: usize) -> View {
        View {
            text: Vec::with_capacity(capacity),
            shifts: Vec::new(),
            next_orig: 0,
            units: Vec::with_capacity(capacity),
        }
    }

    /// Add `bytes` to a decoded view, each standing for the original `s..e`
    /// (an escape, or the byte itself).
    pub(crate) fn push_unit(&mut self, bytes: &[u8], s: usize, e: usize) {
        self.text.extend_from_slice(bytes);
        self.units.extend(bytes.iter().map(|_| (s, e)));
    }

    /// Let the last byte of a decoded view stand for the original up to `e`
    /// too (a mark after the character it came from).
    pub(crate) fn extend_last(&mut self, e: usize) {
        if let Some(last) = self.units.last_mut() {
            last.1 = last.1.max(e);
        }
    }

    fn push(&mut self, bytes: &[u8], orig: usize) {
        if self.shifts.last().is_none() || self.next_orig != orig {
            self.shifts.push((self.text.len(), orig));
        }
        self.text.extend_from_slice(bytes);
        self.next_orig = orig + bytes.len();
    }

    /// Drop the last character shown (a backspace over it).
    fn erase_last(&mut self) {
        let Some(mut n) = self.text.len().checked_sub(1) else {
            return;
        };
        while n > 0 && self.text.get(n).is_some_and(|&c| (0x80..0xc0).contains(&c)) {
            n -= 1;
        }
        self.text.truncate(n);
        while self.shifts.last().is_some_and(|&(v, _)| v >= n) {
            self.shifts.pop();
        }
        // The next byte shown never continues the erased one.
        self.next_orig = usize::MAX;
    }

    fn orig(&self, p: usize) -> usize {
        let k = self.shifts.partition_point(|&(v, _)| v <= p);
        self.shifts
            .get(k.wrapping_sub(1))
            .map_or(p, |&(v, o)| o + (p - v))
    }

    /// The original span of the view's bytes `s..e`: from where its first
    /// byte came to where its last one did, control bytes between included.
    pub fn span(&self, s: usize, e: usize) -> (usize, usize) {
        if let Some(&(first, _)) = self.units.get(s) {
            let last = e
                .checked_sub(1)
                .and_then(|l| self.units.get(l))
                .map_or(first, |u| u.1);
            return (first, last.max(first));
        }
        let start = self.orig(s);
        let end = e.checked_sub(1).map_or(start, |l| self.orig(l) + 1);
        (start, end.max(start))
    }
}

/// Skip a CSI's parameters, intermediates and final byte from `i`.
fn skip_csi(b: &[u8], mut i: usize) -> usize {
    for range in [0x30..=0x3f, 0x20..=0x2f] {
        while let Some((Unit::Text(v), end)) = unit_at(b, i)
            && range.contains(&v)
        {
            i = end;
        }
    }
    match unit_at(b, i) {
        Some((Unit::Text(0x40..=0x7e), end)) => end,
        _ => i,
    }
}

/// Most units of an OSC/DCS string dropped before the view resumes.
const STRING_MAX: usize = 4096;

/// Skip a control string (OSC, DCS, …) up to its terminator (BEL, ST), a
/// newline, or [`STRING_MAX`] units.
fn skip_string(b: &[u8], mut i: usize) -> usize {
    for _ in 0..STRING_MAX {
        let Some((u, end)) = unit_at(b, i) else {
            return i;
        };
        match u {
            Unit::Ctl(0x07 | 0x9c | 0x18 | 0x1a) => return end,
            Unit::Ctl(ESC) => {
                // ST is ESC and a backslash (two when JSON-escaped).
                return match (b.get(end), b.get(end + 1)) {
                    (Some(b'\\'), Some(b'\\')) => end + 2,
                    (Some(b'\\'), _) => end + 1,
                    _ => end,
                };
            }
            Unit::Text(b'\n') => return i,
            _ => i = end,
        }
    }
    i
}

/// Skip what follows an ESC at `i`.
fn skip_escape(b: &[u8], i: usize) -> usize {
    match unit_at(b, i) {
        Some((Unit::Text(b'['), end)) => skip_csi(b, end),
        Some((Unit::Text(b']' | b'P' | b'X' | b'^' | b'_'), end)) => skip_string(b, end),
        Some((Unit::Text(0x20..=0x2f), _)) => {
            let mut i = i;
            while let Some((Unit::Text(0x20..=0x2f), end)) = unit_at(b, i) {
                i = end;
            }
            match unit_at(b, i) {
                Some((Unit::Text(0x30..=0x7e), end)) => end,
                _ => i,
            }
        }
        Some((Unit::Text(0x30..=0x7e), end)) => end,
        _ => i,
    }
}

/// `b` as shown: control sequences removed; with `overstrike`, a backspace
/// also erases the character before it.
pub fn view(b: &[u8], overstrike: bool) -> View {
    view_with(b, overstrike, false)
}

/// Whitespace a compact view drops: ASCII blanks and line breaks, raw or
/// JSON-escaped (`\n`, `\t`).
fn is_blank(b: &[u8], i: usize, end: usize) -> bool {
    matches!(
        b.get(i..end),
        Some([b' ' | b'\t' | b'\n' | 0x0b | 0x0c] | [b'\\', b'n' | b't'])
    )
}

/// [`view`]; with `compact`, whitespace is dropped too ([`compact`]).
fn view_with(b: &[u8], overstrike: bool, compact: bool) -> View {
    let mut v = View {
        text: Vec::with_capacity(b.len()),
        shifts: Vec::new(),
        next_orig: 0,
        units: Vec::new(),
    };
    let mut i = 0;
    while let Some((u, end)) = unit_at(b, i) {
        i = match u {
            Unit::Text(_) if compact && is_blank(b, i, end) => end,
            Unit::Text(_) => {
                v.push(b.get(i..end).unwrap_or_default(), i);
                end
            }
            Unit::Ctl(ESC) => skip_escape(b, end),
            Unit::Ctl(0x9b) => skip_csi(b, end),
            Unit::Ctl(0x90 | 0x98 | 0x9d | 0x9e | 0x9f) => skip_string(b, end),
            Unit::Ctl(BS) if overstrike => {
                v.erase_last();
                end
            }
            Unit::Ctl(_) => end,
        };
    }
    v
}

/// `b` as shown ([`view`]) with its whitespace dropped too: a value printed
/// a few characters a line, or with spaces between its characters or hex
/// digits (`od -tx1`, `xxd -g1`), is whole in it. Only the values the
/// redaction layer knows are looked for there (never the rules: words
/// would join into tokens). None when `b` holds no whitespace.
pub fn compact(b: &[u8]) -> Option<View> {
    let blank = memchr::memchr3(b' ', b'\n', b'\t', b).is_some()
        || b.iter().any(|&c| c == 0x0b || c == 0x0c)
        || memchr::memmem::find(b, b"\\n").is_some()
        || memchr::memmem::find(b, b"\\t").is_some();
    blank.then(|| view_with(b, false, true))
}

/// [`compact`], built whatever `b` holds (the base of the folded view:
/// [`crate::fold::folded`] of its text).
pub fn compact_always(b: &[u8]) -> View {
    view_with(b, false, true)
}

/// The views of `b` worth scanning besides the raw bytes (none for plain text).
pub fn views(b: &[u8]) -> Vec<View> {
    if !has_controls(b) {
        return Vec::new();
    }
    let mut out = vec![view(b, false)];
    if has_backspace(b) {
        out.push(view(b, true));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(b: &[u8], overstrike: bool) -> String {
        String::from_utf8_lossy(&view(b, overstrike).text).into_owned()
    }

    #[test]
    fn control_sequences_are_removed() {
        assert_eq!(shown(b"ab\x1b[1;31mcd\x1b[0m", false), "abcd");
        assert_eq!(shown(b"a\x07b\x00c\rd\x7fe", false), "abcde");
        assert_eq!(
            shown(b"a\x1b]8;;http://x\x1b\\b\x1b]0;t\x07c", false),
            "abc"
        );
        assert_eq!(shown("a\u{9b}0mb\u{85}c".as_bytes(), false), "abc");
        assert_eq!(shown(b"a\x1b(Bb\x1b=c", false), "abc");
        assert_eq!(shown(b"line\n\tnext", false), "line\n\tnext");
        assert_eq!(
            shown(br"a\u001b[0mb\u0007c\rd\\u001b", false),
            r"abcd\\u001b"
        );
        assert_eq!(shown(b"abX\x08c", false), "abXc");
        assert_eq!(shown(b"abX\x08c", true), "abc");
        assert_eq!(shown("é\x08x".as_bytes(), true), "x");
    }

    #[test]
    fn invisible_characters_are_removed() {
        for sep in [
            "\u{200b}",
            "\u{200c}",
            "\u{200d}",
            "\u{2060}",
            "\u{feff}",
            "\u{ad}",
            "\u{200e}",
            "\u{202e}",
            "\u{2066}",
            "\u{180e}",
            "\u{fe0f}",
            "\u{e0041}",
            "\u{34f}",
            "\u{61c}",
        ] {
            let text = format!("ab{sep}cd{sep}{sep}ef");
            assert_eq!(shown(text.as_bytes(), false), "abcdef", "{sep:?}");
            assert!(has_controls(text.as_bytes()), "{sep:?}");
        }
        // JSON-escaped, a surrogate pair (a tag character) included.
        assert_eq!(
            shown(br"ab\u200Bcd\udb40\udc41ef\u00adgh", false),
            "abcdefgh"
        );
        // Visible characters stay, escaped or not.
        assert_eq!(shown("é—ü\u{1F600}".as_bytes(), false), "é—ü\u{1F600}");
        assert!(!has_controls("é—ü".as_bytes()));
        assert_eq!(shown(br"a\ud83d\ude00b", false), r"a\ud83d\ude00b");
        let text = "k=ab\u{200b}cd rest";
        let v = view(text.as_bytes(), false);
        let (s, e) = v.span(2, 6);
        assert_eq!(&text.as_bytes()[s..e], "ab\u{200b}cd".as_bytes());
    }

    #[test]
    fn a_compact_view_drops_whitespace_too() {
        let b = b"ab cd\n\tef\x1b[0m g\\nh\\ti";
        let v = compact(b).unwrap_or_else(|| panic!("has blanks"));
        assert_eq!(v.text, b"abcdefghi");
        let (s, e) = v.span(1, 7);
        assert_eq!(&b[s..e], b"b cd\n\tef\x1b[0m g");
        assert!(compact(b"no-blank-here").is_none());
    }

    #[test]
    fn spans_map_back_over_the_removed_bytes() {
        let b = b"k=ab\x1b[0mcd\x07ef rest";
        let v = view(b, false);
        assert_eq!(v.text, b"k=abcdef rest");
        let (s, e) = v.span(2, 8);
        assert_eq!(&b[s..e], b"ab\x1b[0mcd\x07ef");
        let b = b"xAB\x08CD";
        let v = view(b, true);
        assert_eq!(v.text, b"xACD");
        let (s, e) = v.span(1, 4);
        assert_eq!(&b[s..e], b"AB\x08CD");
    }
}
