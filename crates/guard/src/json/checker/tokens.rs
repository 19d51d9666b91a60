//! The checker's token readers: strings (escapes, surrogates, raw control
//! characters), single-quoted strings, numbers (every non-JSON form named) and
//! bare words (`true`/`false`/`null`, and the extensions `NaN`, `undefined`, …).

use super::super::regions::skip_plain;
use super::super::rejections::shown;
use super::{Category, Checker, describe_byte};

impl Checker<'_> {
    /// Scans a double-quoted string starting at `self.pos` (on the quote).
    /// Returns the decoded text when `decode` (keys), or None on a fatal error.
    pub(super) fn string(&mut self, decode: bool) -> Option<String> {
        let open = self.pos;
        let mut i = open + 1;
        let mut plain_from = i;
        let mut decoded = String::new();
        loop {
            let Some(b) = self.at(i) else {
                self.pos = self.limit;
                self.truncated("inside a string");
                return None;
            };
            match b {
                b'"' => {
                    if decode {
                        decoded.push_str(self.text.get(plain_from..i).unwrap_or(""));
                    }
                    self.pos = i + 1;
                    self.last_string_end = Some(i);
                    return Some(decoded);
                }
                b'\\' => {
                    if decode {
                        decoded.push_str(self.text.get(plain_from..i).unwrap_or(""));
                    }
                    let Some(e) = self.at(i + 1) else {
                        self.pos = self.limit;
                        self.truncated("inside a string escape");
                        return None;
                    };
                    let simple = match e {
                        b'"' => Some('"'),
                        b'\\' => Some('\\'),
                        b'/' => Some('/'),
                        b'b' => Some('\u{8}'),
                        b'f' => Some('\u{c}'),
                        b'n' => Some('\n'),
                        b'r' => Some('\r'),
                        b't' => Some('\t'),
                        _ => None,
                    };
                    if let Some(c) = simple {
                        if decode {
                            decoded.push(c);
                        }
                        i += 2;
                    } else if e == b'u' {
                        match self.unicode_escape(i) {
                            Ok((c, next)) => {
                                if decode {
                                    decoded.push(c);
                                }
                                i = next;
                            }
                            Err(()) => return None,
                        }
                    } else {
                        let what = describe_byte(self.text, i + 1);
                        self.fatal(
                            i,
                            Category::Escaping,
                            format!("invalid escape '\\' followed by {what} inside a string: a literal backslash must be written \\\\"),
                        );
                        return None;
                    }
                    plain_from = i;
                }
                0x00..=0x1f => {
                    let name = match b {
                        b'\n' => "raw newline".to_string(),
                        b'\r' => "raw carriage return".to_string(),
                        b'\t' => "raw tab".to_string(),
                        other => format!("raw control character U+{other:04X}"),
                    };
                    let esc = match b {
                        b'\n' => "\\n".to_string(),
                        b'\r' => "\\r".to_string(),
                        b'\t' => "\\t".to_string(),
                        other => format!("\\u{other:04x}"),
                    };
                    self.problem(
                        i,
                        Category::Escaping,
                        format!("{name} inside a string: write it as {esc}"),
                    );
                    i += 1;
                }
                _ => i = skip_plain(self.bytes, i + 1, self.limit),
            }
        }
    }

    pub(super) fn hex4(&self, at: usize) -> Option<u32> {
        let s = self.text.get(at..at + 4)?;
        if at + 4 > self.limit || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(s, 16).ok()
    }

    /// `\uXXXX` (with surrogate pairs) at `i` (the backslash). Returns the char and the next offset.
    pub(super) fn unicode_escape(&mut self, i: usize) -> Result<(char, usize), ()> {
        let Some(hi) = self.hex4(i + 2) else {
            if i + 6 > self.limit && self.open_ended {
                self.pos = self.limit;
                self.truncated("inside a \\u escape");
            } else {
                self.fatal(
                    i,
                    Category::Escaping,
                    "invalid \\u escape: it needs exactly four hex digits (\\u00e9)".to_string(),
                );
            }
            return Err(());
        };
        if (0xD800..0xDC00).contains(&hi) {
            let lo = if self.at(i + 6) == Some(b'\\') && self.at(i + 7) == Some(b'u') {
                self.hex4(i + 8)
            } else {
                None
            };
            match lo {
                Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    match char::from_u32(c) {
                        Some(ch) => Ok((ch, i + 12)),
                        None => {
                            self.fatal(
                                i,
                                Category::Escaping,
                                "invalid surrogate pair in \\u escape".to_string(),
                            );
                            Err(())
                        }
                    }
                }
                _ => {
                    self.fatal(
                        i,
                        Category::Escaping,
                        "lone UTF-16 surrogate in \\u escape: write the character itself or a complete surrogate pair"
                            .to_string(),
                    );
                    Err(())
                }
            }
        } else if (0xDC00..0xE000).contains(&hi) {
            self.fatal(
                i,
                Category::Escaping,
                "lone UTF-16 surrogate in \\u escape: write the character itself or a complete surrogate pair"
                    .to_string(),
            );
            Err(())
        } else {
            match char::from_u32(hi) {
                Some(c) => Ok((c, i + 6)),
                None => {
                    self.fatal(i, Category::Escaping, "invalid \\u escape".to_string());
                    Err(())
                }
            }
        }
    }

    /// A single-quoted string (named, then stepped over). Returns its raw text.
    pub(super) fn single_quoted(&mut self) -> Option<String> {
        let open = self.pos;
        self.problem(
            open,
            Category::Syntax,
            "single-quoted string: JSON strings use double quotes \"...\"".to_string(),
        );
        let mut i = open + 1;
        loop {
            match self.at(i) {
                None => {
                    self.pos = self.limit;
                    self.truncated("inside a single-quoted string");
                    return None;
                }
                Some(b'\\') => i += 2,
                Some(b'\'') => {
                    self.pos = i + 1;
                    return Some(self.text.get(open + 1..i).unwrap_or("").to_string());
                }
                Some(_) => i += 1,
            }
        }
    }

    pub(super) fn word_end(&self, from: usize) -> usize {
        let mut i = from;
        while let Some(b) = self.at(i) {
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80 {
                i += 1;
            } else {
                break;
            }
        }
        i
    }

    /// A number at `self.pos` (strict grammar; deviations are named and stepped over).
    pub(super) fn number(&mut self) {
        let start = self.pos;
        let b = self.bytes;
        let mut i = start;
        let at = |i: usize| {
            if i < self.limit {
                b.get(i).copied()
            } else {
                None
            }
        };
        let digit = |o: Option<u8>| o.is_some_and(|c| c.is_ascii_digit());
        let mut ok = true;
        if at(i) == Some(b'-') {
            i += 1;
        }
        if at(i) == Some(b'0') {
            i += 1;
            if digit(at(i)) {
                ok = false;
            }
        } else if digit(at(i)) {
            while digit(at(i)) {
                i += 1;
            }
        } else {
            ok = false;
        }
        if ok && at(i) == Some(b'.') {
            i += 1;
            if !digit(at(i)) {
                ok = false;
            }
            while digit(at(i)) {
                i += 1;
            }
        }
        if ok && matches!(at(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(at(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !digit(at(i)) {
                ok = false;
            }
            while digit(at(i)) {
                i += 1;
            }
        }
        // Anything word-like glued to the number makes it invalid too (0x1F, 1_000, 2.5f).
        let mut end = i;
        while let Some(c) = at(end) {
            if c.is_ascii_alphanumeric()
                || c == b'.'
                || c == b'_'
                || ((c == b'+' || c == b'-') && end > start)
            {
                end += 1;
            } else {
                break;
            }
        }
        if end != i {
            ok = false;
        }
        if !ok {
            if end == self.limit && self.open_ended {
                self.pos = end;
                self.truncated("inside a number");
                return;
            }
            let lit = self.text.get(start..end).unwrap_or("");
            let lit = shown(lit, 40);
            let hint = if lit.starts_with('+') {
                "remove the leading '+'"
            } else if lit.starts_with('.') || lit.starts_with("-.") {
                "write a digit before the decimal point (0.5)"
            } else if lit.ends_with('.') {
                "write a digit after the decimal point (1.0)"
            } else if lit.to_ascii_lowercase().contains("0x") {
                "hex numbers are not JSON; write it in decimal"
            } else {
                "JSON numbers have no leading zeros, no '+', no hex and no suffixes"
            };
            self.problem(
                start,
                Category::Syntax,
                format!("invalid number '{lit}': {hint}"),
            );
        }
        self.pos = end.max(start + 1);
    }

    /// A bare word in value position (literals and named extensions).
    pub(super) fn word_value(&mut self) -> bool {
        let start = self.pos;
        let end = self.word_end(start);
        let word = self.text.get(start..end).unwrap_or("");
        match word {
            "true" | "false" | "null" => {
                self.pos = end;
                true
            }
            "True" | "False" | "None" => {
                let json = match word {
                    "True" => "true",
                    "False" => "false",
                    _ => "null",
                };
                self.problem(
                    start,
                    Category::Syntax,
                    format!("Python literal {word}: write {json}"),
                );
                self.pos = end;
                true
            }
            "NaN" | "Infinity" => {
                self.problem(
                    start,
                    Category::Syntax,
                    format!("{word} is not JSON: use a finite number, null or a string"),
                );
                self.pos = end;
                true
            }
            "undefined" => {
                self.problem(
                    start,
                    Category::Syntax,
                    "undefined is not JSON: write null".to_string(),
                );
                self.pos = end;
                true
            }
            _ => {
                if end == self.limit
                    && self.open_ended
                    && ["true", "false", "null"]
                        .iter()
                        .any(|l| l.starts_with(word))
                {
                    self.pos = end;
                    self.truncated("inside a literal");
                    return false;
                }
                let shown = shown(word, 40);
                self.fatal(
                    start,
                    Category::Syntax,
                    format!("unquoted text '{shown}' where a JSON value was expected: quote strings with \"...\""),
                );
                false
            }
        }
    }
}
