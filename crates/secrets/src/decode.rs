//! Decoded views: the text with every byte spelled as an escape or a number
//! turned back into that byte, with a way back to the original offsets.
//!
//! A secret printed URL-encoded (`aB3%2FdE6`, or `%61%42%33…` byte by
//! byte), as `\x61\x42`, `\u0061`, `\u{61}`, `\U00000061`, `\141`, `0x61`,
//! `&#x61;`, `&#97;`, `&quot;`, `\/`, or as bare numbers a byte each with
//! separators (`61:42:33`, `61-42`, `97,66,51`, `141 102 063`), is whole
//! in one of these views. The redaction layer looks for the values it
//! knows there (never the rules) and replaces a value found over its whole
//! original span, escapes and separators included.

use super::view::View;

/// Most bytes between two escapes, or two numbers of a run, that are
/// dropped as a separator (`, `, `:`, `", "`, a line break and indent),
/// none of them a letter or digit.
const SEP_MAX: usize = 4;
/// Fewest bytes a run of bare numbers decodes to, for it to be decoded (the
/// shortest value masked is 6 bytes long).
const RUN_MIN: usize = 6;

/// What an escape stands for.
enum Decoded {
    Byte(u8),
    Char(u32),
}

fn digits(b: &[u8], i: usize, n: usize, radix: u32) -> Option<u32> {
    let s = std::str::from_utf8(b.get(i..i + n)?).ok()?;
    if !s.bytes().all(|c| char::from(c).is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(s, radix).ok()
}

/// Up to `max` digits of `radix` at `i`: their value and where they end.
fn digits_upto(b: &[u8], i: usize, max: usize, radix: u32) -> Option<(u32, usize)> {
    let n = b
        .get(i..)?
        .iter()
        .take(max)
        .take_while(|&&c| char::from(c).is_digit(radix))
        .count();
    (n > 0).then(|| digits(b, i, n, radix).map(|v| (v, i + n)))?
}

fn is_hex(b: &[u8], i: usize) -> bool {
    b.get(i).is_some_and(u8::is_ascii_hexdigit)
}

fn is_alnum(b: &[u8], i: usize) -> bool {
    b.get(i).is_some_and(u8::is_ascii_alphanumeric)
}

/// The HTML character references by name a value's signs are written with.
const ENTITIES: &[(&[u8], u8)] = &[
    (b"amp;", b'&'),
    (b"lt;", b'<'),
    (b"gt;", b'>'),
    (b"quot;", b'"'),
    (b"apos;", b'\''),
    (b"sol;", b'/'),
    (b"bsol;", b'\\'),
    (b"colon;", b':'),
    (b"equals;", b'='),
    (b"plus;", b'+'),
    (b"percnt;", b'%'),
    (b"num;", b'#'),
    (b"excl;", b'!'),
    (b"dollar;", b'$'),
    (b"commat;", b'@'),
    (b"lowbar;", b'_'),
    (b"period;", b'.'),
    (b"comma;", b','),
    (b"semi;", b';'),
    (b"quest;", b'?'),
    (b"ast;", b'*'),
    (b"tilde;", b'~'),
    (b"Hat;", b'^'),
    (b"grave;", b'`'),
    (b"verbar;", b'|'),
    (b"lpar;", b'('),
    (b"rpar;", b')'),
    (b"lsqb;", b'['),
    (b"rsqb;", b']'),
    (b"lcub;", b'{'),
    (b"rcub;", b'}'),
];

/// A `\u` escape's code point at `i` (the `\`), a surrogate pair as one.
fn unicode_escape(b: &[u8], i: usize, slashes: usize) -> Option<(Decoded, usize)> {
    let at = i + slashes + 1;
    if b.get(at) == Some(&b'{') {
        let (v, end) = digits_upto(b, at + 1, 6, 16)?;
        return (b.get(end) == Some(&b'}')).then_some((Decoded::Char(v), end + 1));
    }
    let v = digits(b, at, 4, 16)?;
    let end = at + 4;
    if (0xD800..0xDC00).contains(&v) {
        let lo_at = end + slashes + 1;
        let pair = b
            .get(end..end + slashes)
            .is_some_and(|s| s.iter().all(|&c| c == b'\\'))
            && b.get(lo_at - 1) == Some(&b'u');
        let lo = digits(b, lo_at, 4, 16).filter(|lo| pair && (0xDC00..0xE000).contains(lo))?;
        return Some((
            Decoded::Char(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)),
            lo_at + 4,
        ));
    }
    Some((Decoded::Char(v), end))
}

/// The escape at `i`, if one starts there: what it stands for and where it ends.
fn escape_at(b: &[u8], i: usize) -> Option<(Decoded, usize)> {
    match *b.get(i)? {
        b'%' => Some((Decoded::Byte(digits(b, i + 1, 2, 16)? as u8), i + 3)),
        b'\\' => {
            // One backslash, or two (the escape itself JSON-escaped).
            let slashes = if b.get(i + 1) == Some(&b'\\')
                && b.get(i + 2).is_some_and(|c| b"xXuU01234567".contains(c))
            {
                2
            } else {
                1
            };
            let at = i + slashes;
            match *b.get(at)? {
                b'x' | b'X' => Some((Decoded::Byte(digits(b, at + 1, 2, 16)? as u8), at + 3)),
                b'u' => unicode_escape(b, i, slashes),
                b'U' => Some((Decoded::Char(digits(b, at + 1, 8, 16)?), at + 9)),
                b'0'..=b'3' => Some((Decoded::Byte(digits(b, at, 3, 8)? as u8), at + 3)),
                c if slashes == 1 && c.is_ascii_punctuation() => Some((Decoded::Byte(c), at + 1)),
                _ => None,
            }
        }
        b'&' => {
            if b.get(i + 1) == Some(&b'#') {
                let (v, end) = if matches!(b.get(i + 2), Some(b'x' | b'X')) {
                    digits_upto(b, i + 3, 6, 16)?
                } else {
                    digits_upto(b, i + 2, 7, 10)?
                };
                return (b.get(end) == Some(&b';')).then_some((Decoded::Char(v), end + 1));
            }
            let rest = b.get(i + 1..)?;
            ENTITIES
                .iter()
                .find(|(name, _)| rest.starts_with(name))
                .map(|&(name, c)| (Decoded::Byte(c), i + 1 + name.len()))
        }
        b'0' if matches!(b.get(i + 1), Some(b'x' | b'X'))
            && !is_alnum(b, i.wrapping_sub(1))
            && !is_hex(b, i + 4) =>
        {
            Some((Decoded::Byte(digits(b, i + 2, 2, 16)? as u8), i + 4))
        }
        _ => None,
    }
}

fn push_decoded(v: &mut View, d: &Decoded, s: usize, e: usize) {
    match *d {
        Decoded::Byte(c) => v.push_unit(&[c], s, e),
        Decoded::Char(c) => {
            let c = char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
            v.push_unit(c.encode_utf8(&mut [0; 4]).as_bytes(), s, e);
        }
    }
}

/// Whether `b` may hold an escape [`escapes`] decodes (cheap; most text does not).
fn may_hold_escapes(b: &[u8]) -> bool {
    memchr::memchr3_iter(b'%', b'\\', b'&', b).any(|i| escape_at(b, i).is_some())
        || memchr::memmem::find_iter(b, b"0x")
            .chain(memchr::memmem::find_iter(b, b"0X"))
            .any(|i| escape_at(b, i).is_some())
}

/// Where the next escape after a separator starts: the separator (at most
/// [`SEP_MAX`] bytes, no letter or digit) is dropped.
fn next_escape(b: &[u8], end: usize) -> Option<usize> {
    (end + 1..=end + SEP_MAX).find(|&j| {
        b.get(end..j)
            .is_some_and(|sep| sep.iter().all(|c| !c.is_ascii_alphanumeric()))
            && escape_at(b, j).is_some()
    })
}

/// `b` with every escape decoded, and the separators between two escapes
/// dropped. None when `b` holds no escape.
pub fn escapes(b: &[u8]) -> Option<View> {
    if !may_hold_escapes(b) {
        return None;
    }
    let mut v = View::decoded(b.len());
    let mut i = 0;
    while i < b.len() {
        match escape_at(b, i) {
            Some((d, end)) => {
                push_decoded(&mut v, &d, i, end);
                i = next_escape(b, end).unwrap_or(end);
            }
            None => {
                v.push_unit(b.get(i..=i).unwrap_or_default(), i, i + 1);
                i += 1;
            }
        }
    }
    Some(v)
}

/// How bare numbers spell bytes.
#[derive(Clone, Copy)]
enum Radix {
    /// Hex digits, two a byte (`51:78`, `5178-3748`; up to 4 bytes a number).
    Hex,
    /// Decimal numbers of up to three digits, 255 at most (`81,120,55`).
    Decimal,
    /// Octal numbers of three digits (`od -b`: `121 170 067`).
    Octal,
}

/// The bytes the number `t` spells in `radix`, if it is one.
fn number_bytes(t: &[u8], radix: Radix) -> Option<Vec<u8>> {
    let s = std::str::from_utf8(t).ok()?;
    match radix {
        Radix::Hex if t.len().is_multiple_of(2) && t.len() <= 8 => hex::decode(s).ok(),
        Radix::Decimal if t.len() <= 3 && t.iter().all(u8::is_ascii_digit) => {
            u8::try_from(s.parse::<u32>().ok()?).ok().map(|c| vec![c])
        }
        Radix::Octal if t.len() == 3 => u8::try_from(u32::from_str_radix(s, 8).ok()?)
            .ok()
            .map(|c| vec![c]),
        _ => None,
    }
}

/// The words of `b` (maximal runs of ASCII letters and digits).
fn words(b: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() && !is_alnum(b, i) {
            i += 1;
        }
        let s = i;
        while is_alnum(b, i) {
            i += 1;
        }
        (s < i).then_some((s, i))
    })
}

/// Runs of bare numbers in `radix` (each with its bytes) that spell at
/// least [`RUN_MIN`] bytes, separated by at most [`SEP_MAX`] bytes other
/// than letters and digits (`od` output goes on over its line breaks).
fn number_runs(b: &[u8], radix: Radix) -> Vec<Vec<(usize, usize, Vec<u8>)>> {
    let mut runs = Vec::new();
    let mut run: Vec<(usize, usize, Vec<u8>)> = Vec::new();
    let mut flush = |run: &mut Vec<(usize, usize, Vec<u8>)>| {
        if run.iter().map(|t| t.2.len()).sum::<usize>() >= RUN_MIN {
            runs.push(std::mem::take(run));
        }
        run.clear();
    };
    for (s, e) in words(b) {
        let Some(bytes) = b.get(s..e).and_then(|t| number_bytes(t, radix)) else {
            flush(&mut run);
            continue;
        };
        // Joined when the separator is short and, but for whitespace, the
        // same as the one before (a program prints every byte alike).
        let sep = |a: usize, z: usize| -> Vec<u8> {
            b.get(a..z)
                .unwrap_or_default()
                .iter()
                .copied()
                .filter(|c| !c.is_ascii_whitespace())
                .collect()
        };
        let joined = run.last().is_some_and(|&(ps, pe, _)| {
            s - pe <= SEP_MAX
                && (run.len() < 2
                    || run
                        .get(run.len() - 2)
                        .is_some_and(|&(_, qe, _)| sep(qe, ps) == sep(pe, s)))
        });
        if !joined {
            flush(&mut run);
        }
        run.push((s, e, bytes));
    }
    flush(&mut run);
    runs
}

/// The runs of bare numbers of `b` that spell bytes ([`number_runs`]),
/// decoded, their separators dropped: one view a radix that has such a
/// run, holding the runs only (joined by a `0xff` byte, which no UTF-8
/// value holds), so that its cost follows the runs, not the text.
pub fn numbers(b: &[u8]) -> Vec<View> {
    // Cheap test first: a run needs digits.
    if b.iter()
        .filter(|c| c.is_ascii_digit())
        .take(RUN_MIN)
        .count()
        < RUN_MIN
    {
        return Vec::new();
    }
    let mut out = Vec::new();
    for radix in [Radix::Hex, Radix::Decimal, Radix::Octal] {
        let runs = number_runs(b, radix);
        if runs.is_empty() {
            continue;
        }
        let mut v = View::decoded(0);
        for run in runs {
            for (s, e, bytes) in &run {
                v.push_unit(bytes, *s, *e);
            }
            if let Some(&(_, e, _)) = run.last() {
                v.push_unit(&[0xff], e, e);
            }
        }
        out.push(v);
    }
    out
}

/// Every decoded view of `b` worth scanning ([`escapes`], [`numbers`]).
pub fn decoded(b: &[u8]) -> Vec<View> {
    let mut out: Vec<View> = escapes(b).into_iter().collect();
    out.extend(numbers(b));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(v: &View) -> String {
        String::from_utf8_lossy(&v.text).into_owned()
    }

    fn esc(b: &str) -> String {
        escapes(b.as_bytes()).map_or_else(|| b.to_owned(), |v| shown(&v))
    }

    #[test]
    fn escapes_are_decoded() {
        assert_eq!(esc("sig=aB3%2FdE6%2bgH9%3D"), "sig=aB3/dE6+gH9=");
        assert_eq!(esc("%51%78%37"), "Qx7");
        assert_eq!(esc(r"\x51\X78\x37"), "Qx7");
        assert_eq!(esc(r"\u0051\u0078 \u{37}\U00000041"), "Qx7A");
        assert_eq!(esc(r"\\u0051\\x78"), "Qx");
        assert_eq!(esc(r"\121\170\067"), "Qx7");
        assert_eq!(esc("0x51 0x78, 0x37"), "Qx7");
        assert_eq!(esc("&#x51;&#120;&#55;&quot;&amp;&sol;"), "Qx7\"&/");
        assert_eq!(esc(r#"a\/b\"c"#), r#"a/b"c"#);
        assert_eq!(esc(r"\ud83d\ude00"), "\u{1F600}");
        // Separators go only between two escapes; other text stays.
        assert_eq!(esc("%51 and %78"), "Q and x");
        assert_eq!(esc("10% done, 0x1234 & more"), "10% done, 0x1234 & more");
        assert!(escapes(b"plain words 100% sure").is_none());
    }

    #[test]
    fn a_decoded_span_maps_back_over_the_escapes() {
        let b = b"k=%51%78, %37%41 end";
        let v = escapes(b).unwrap_or_else(|| panic!("escapes"));
        assert_eq!(v.text, b"k=Qx7A end");
        let (s, e) = v.span(2, 6);
        assert_eq!(&b[s..e], b"%51%78, %37%41");
    }

    #[test]
    fn runs_of_numbers_are_decoded() {
        let all = |b: &str| -> Vec<String> { numbers(b.as_bytes()).iter().map(shown).collect() };
        let hex = "51:78:37:48:76:32";
        let run = "Qx7Hv2\u{fffd}".to_owned();
        assert!(all(&format!(":{hex}:")).contains(&run));
        assert!(all("51-78-37-48-76-32").contains(&run));
        assert!(all("[81, 120, 55, 72, 118, 50]").contains(&run));
        assert!(all("121 170 067 110 166 062").contains(&run));
        assert!(all(" 81 120\n  55  72 118  50").contains(&run));
        // Too short a run, numbers far apart, or separators that differ
        // (but for whitespace) are left alone.
        assert!(all("51:78:37 then 12 5 6").is_empty());
        assert!(all("51 (so) 78 (so) 37 (so) 48 (so) 76 (so) 32").is_empty());
        assert!(all("81:120 55,72-118/50").is_empty());
        assert!(all("no numbers here at all").is_empty());
        let b = b"x 51:78:37:48:76:32 y";
        let v = &numbers(b)[0];
        let (s, e) = v.span(0, 6);
        assert_eq!(&b[s..e], b"51:78:37:48:76:32");
    }
}
