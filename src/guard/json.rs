//! Strict JSON for agent answers: the string-aware region scanner, a strict
//! diagnosing checker (every known JSON extension is named, never repaired),
//! and `parse_json` for `output: json` steps.
//!
//! The checker is iterative (explicit stack, depth limit 128 like serde_json)
//! and linear in the size of its input. The value itself is always built by
//! `serde_json` from the exact slice the checker accepted, so the two must agree.

use super::{Category, Rejection};
use serde_json::Value;
use std::collections::HashMap;

/// Most value/key positions remembered per region (schema errors past them point at the value's root).
const MAX_INDEX: usize = 50_000;

/// Deepest nesting accepted (serde_json's own limit).
pub(crate) const MAX_DEPTH: usize = 128;

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

/// What the strict checker found in one region.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// Every problem found, in text order (extensions, duplicates, then at most one fatal error).
    pub problems: Vec<Rejection>,
    /// The checker stopped on an error it cannot step over.
    pub fatal: bool,
    /// The text ended inside the value.
    pub truncated: bool,
    /// JSON pointer -> byte offset of the value, down to the index depth.
    pub index: HashMap<String, usize>,
    /// JSON pointer -> byte offset of the member's key, down to the index depth.
    pub keys: HashMap<String, usize>,
    /// First byte after the value (when not fatal).
    pub value_end: usize,
    /// Problems found but not recorded (past [`MAX_REPORTED`]; [`finish`] reports the overflow).
    pub suppressed: usize,
}

impl Checked {
    /// Only duplicate keys (or nothing) were found: the value can be built and validated.
    pub fn syntax_ok(&self) -> bool {
        !self.fatal
            && self
                .problems
                .iter()
                .all(|p| p.category == Category::DuplicateKey)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// A value (after `:` or at the start).
    Value,
    /// First key or `}` right after `{`.
    KeyOrEnd,
    /// A key after `,` (a `}` here is a trailing comma).
    Key,
    /// `:` after a key.
    Colon,
    /// `,` or `}` after a member.
    ObjNext,
    /// First element or `]` right after `[`.
    ElemOrEnd,
    /// An element after `,` (a `]` here is a trailing comma).
    Elem,
    /// `,` or `]` after an element.
    ArrNext,
    /// Only whitespace until the end of the region.
    Done,
}

struct Frame {
    is_obj: bool,
    open_at: usize,
    /// Key -> offset of its first occurrence (objects only).
    keys: HashMap<String, usize>,
    /// Pointer segment of the member or element being parsed (for the index).
    seg: String,
    next_index: usize,
    /// Offset of the last `,` (for trailing-comma messages).
    comma_at: usize,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn ptr_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn describe_byte(text: &str, at: usize) -> String {
    match text.get(at..).and_then(|s| s.chars().next()) {
        None => "the end of the answer".to_string(),
        Some(c)
            if c.is_control()
                || c.is_whitespace() && c != ' '
                || c == MARK_OPEN
                || c == MARK_CLOSE =>
        {
            format!("character U+{:04X}", c as u32)
        }
        Some(c) => format!("'{c}'"),
    }
}

/// Strict checker over `text[start..limit]`: exactly one JSON value, whitespace around it.
struct Checker<'a> {
    text: &'a str,
    bytes: &'a [u8],
    limit: usize,
    /// The region runs to the end of the answer without a closer (truncation is possible).
    open_ended: bool,
    pos: usize,
    out: Checked,
    stack: Vec<Frame>,
    index_depth: usize,
    /// End offset of the last string token (for the "unescaped quote?" hint).
    last_string_end: Option<usize>,
}

impl<'a> Checker<'a> {
    fn peek(&self) -> Option<u8> {
        if self.pos < self.limit {
            self.bytes.get(self.pos).copied()
        } else {
            None
        }
    }

    fn at(&self, i: usize) -> Option<u8> {
        if i < self.limit {
            self.bytes.get(i).copied()
        } else {
            None
        }
    }

    fn problem(&mut self, at: usize, category: Category, message: String) {
        if self.out.problems.len() < MAX_REPORTED {
            self.out.problems.push(pending(at, category, message));
        } else {
            self.out.suppressed += 1;
        }
    }

    /// The error that stops the checker: always recorded, whatever the cap.
    fn fatal(&mut self, at: usize, category: Category, message: String) {
        self.out.problems.push(pending(at, category, message));
        self.out.fatal = true;
    }

    fn truncated(&mut self, what: &str) {
        self.out.truncated = true;
        self.out.fatal = true;
        let start = self.stack.first().map_or(self.pos, |f| f.open_at);
        let lc = pos(start);
        let msg = if self.open_ended {
            format!(
                "the answer ends {what} (the JSON value opened at {lc} is never closed): send the complete answer, nothing is completed for you"
            )
        } else {
            format!(
                "the JSON value opened at {lc} ends {what}: check that every string, object and array is closed"
            )
        };
        let at = self.limit;
        self.out
            .problems
            .push(pending(at, Category::Truncated, msg));
    }

    /// Skips whitespace; comments are named and skipped. Returns false when stopped fatally.
    fn skip_ws(&mut self) -> bool {
        loop {
            match self.peek() {
                Some(b) if is_ws(b) => self.pos += 1,
                Some(b'#') => {
                    let at = self.pos;
                    self.problem(
                        at,
                        Category::Syntax,
                        "'#' comment: JSON has no comments, remove it".to_string(),
                    );
                    self.skip_line();
                }
                Some(b'/') if self.at(self.pos + 1) == Some(b'/') => {
                    let at = self.pos;
                    self.problem(
                        at,
                        Category::Syntax,
                        "'//' comment: JSON has no comments, remove it".to_string(),
                    );
                    self.skip_line();
                }
                Some(b'/') if self.at(self.pos + 1) == Some(b'*') => {
                    let at = self.pos;
                    self.problem(
                        at,
                        Category::Syntax,
                        "'/* */' comment: JSON has no comments, remove it".to_string(),
                    );
                    let mut i = self.pos + 2;
                    loop {
                        match self.at(i) {
                            None => {
                                self.pos = self.limit;
                                self.truncated("inside a /* comment");
                                return false;
                            }
                            Some(b'*') if self.at(i + 1) == Some(b'/') => {
                                self.pos = i + 2;
                                break;
                            }
                            Some(_) => i += 1,
                        }
                    }
                }
                _ => return true,
            }
        }
    }

    fn skip_line(&mut self) {
        while let Some(b) = self.peek() {
            if b == b'\n' {
                break;
            }
            self.pos += 1;
        }
    }

    fn depth(&self) -> usize {
        self.stack.len()
    }

    fn pointer(&self) -> String {
        let mut p = String::new();
        for f in &self.stack {
            p.push('/');
            p.push_str(&f.seg);
        }
        p
    }

    fn record_index(&mut self, at: usize, key: bool) {
        // Positions only serve the (capped) report: a bounded index keeps memory linear and small.
        if self.depth() <= self.index_depth
            && self.out.index.len() + self.out.keys.len() < MAX_INDEX
        {
            let p = self.pointer();
            let map = if key {
                &mut self.out.keys
            } else {
                &mut self.out.index
            };
            map.entry(p).or_insert(at);
        }
    }

    /// Scans a double-quoted string starting at `self.pos` (on the quote).
    /// Returns the decoded text when `decode` (keys), or None on a fatal error.
    fn string(&mut self, decode: bool) -> Option<String> {
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

    fn hex4(&self, at: usize) -> Option<u32> {
        let s = self.text.get(at..at + 4)?;
        if at + 4 > self.limit || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(s, 16).ok()
    }

    /// `\uXXXX` (with surrogate pairs) at `i` (the backslash). Returns the char and the next offset.
    fn unicode_escape(&mut self, i: usize) -> Result<(char, usize), ()> {
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
    fn single_quoted(&mut self) -> Option<String> {
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

    fn word_end(&self, from: usize) -> usize {
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
    fn number(&mut self) {
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
    fn word_value(&mut self) -> bool {
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

    /// Parses a key (at `self.pos`) and records it; returns false on a fatal error.
    fn key(&mut self) -> bool {
        let at = self.pos;
        let key = match self.peek() {
            Some(b'"') => match self.string(true) {
                Some(k) => k,
                None => return false,
            },
            Some(b'\'') => match self.single_quoted() {
                Some(k) => k,
                None => return false,
            },
            Some(b) if b.is_ascii_alphabetic() || b == b'_' || b == b'$' => {
                let end = self.word_end(at);
                let word = self.text.get(at..end).unwrap_or("").to_string();
                let w = shown(&word, 60);
                self.problem(
                    at,
                    Category::Syntax,
                    format!("unquoted key {w}: write \"{w}\""),
                );
                self.pos = end;
                word
            }
            _ => {
                let what = describe_byte(self.text, at);
                if self.peek().is_none() {
                    self.truncated("where a key was expected");
                } else {
                    self.fatal(
                        at,
                        Category::Syntax,
                        format!("expected a \"key\" but found {what}"),
                    );
                }
                return false;
            }
        };
        if let Some(frame) = self.stack.last_mut() {
            frame.seg = ptr_escape(&key);
            if let Some(&first) = frame.keys.get(&key) {
                let lc = pos(first);
                let shown = shown(&key, 60);
                if self.out.problems.len() >= MAX_REPORTED {
                    self.out.suppressed += 1;
                    return true;
                }
                self.out.problems.push(pending(
                    at,
                    Category::DuplicateKey,
                    format!("key \"{shown}\" appears twice in the same object (first at {lc}): keep exactly one"),
                ));
            } else {
                frame.keys.insert(key, at);
            }
        }
        self.record_index(at, true);
        true
    }

    fn open(&mut self, is_obj: bool) -> bool {
        if self.depth() >= MAX_DEPTH {
            let at = self.pos;
            self.fatal(
                at,
                Category::Syntax,
                format!("nesting deeper than {MAX_DEPTH} levels: flatten the value"),
            );
            return false;
        }
        self.stack.push(Frame {
            is_obj,
            open_at: self.pos,
            keys: HashMap::new(),
            seg: String::new(),
            next_index: 0,
            comma_at: 0,
        });
        self.pos += 1;
        true
    }

    /// Starts an array element: sets its pointer segment and records it.
    fn element(&mut self) {
        if let Some(f) = self.stack.last_mut() {
            f.seg = f.next_index.to_string();
            f.next_index += 1;
        }
    }

    /// After a value: what comes next.
    fn after_value(&self) -> Want {
        match self.stack.last() {
            None => Want::Done,
            Some(f) if f.is_obj => Want::ObjNext,
            Some(_) => Want::ArrNext,
        }
    }

    /// Parses one value at `self.pos`; containers push a frame. Returns the next want.
    fn value(&mut self) -> Option<Want> {
        let Some(b) = self.peek() else {
            self.truncated("where a value was expected");
            return None;
        };
        let at = self.pos;
        self.record_index(at, false);
        match b {
            b'{' => {
                if !self.open(true) {
                    return None;
                }
                Some(Want::KeyOrEnd)
            }
            b'[' => {
                if !self.open(false) {
                    return None;
                }
                Some(Want::ElemOrEnd)
            }
            b'"' => {
                self.string(false)?;
                Some(self.after_value())
            }
            b'\'' => {
                self.single_quoted()?;
                Some(self.after_value())
            }
            b'-' if self
                .text
                .get(self.pos..)
                .is_some_and(|s| s.starts_with("-Infinity")) =>
            {
                let at = self.pos;
                self.problem(
                    at,
                    Category::Syntax,
                    "-Infinity is not JSON: use a finite number, null or a string".to_string(),
                );
                self.pos += "-Infinity".len();
                Some(self.after_value())
            }
            b'-' | b'+' | b'.' | b'0'..=b'9' => {
                self.number();
                if self.out.fatal {
                    return None;
                }
                Some(self.after_value())
            }
            b if b.is_ascii_alphabetic() || b == b'_' => {
                if !self.word_value() {
                    return None;
                }
                Some(self.after_value())
            }
            _ => {
                let at = self.pos;
                let what = describe_byte(self.text, at);
                self.fatal(
                    at,
                    Category::Syntax,
                    format!("expected a JSON value but found {what}"),
                );
                None
            }
        }
    }

    fn close(&mut self) -> Want {
        self.stack.pop();
        self.pos += 1;
        self.after_value()
    }

    /// The "expected , or }" error, with the unescaped-quote hint when a string just ended.
    fn expected_separator(&mut self, closer: char) {
        let at = self.pos;
        if self.peek().is_none() {
            self.truncated("before the value is closed");
            return;
        }
        let what = describe_byte(self.text, at);
        match self.last_string_end {
            Some(q)
                if self
                    .text
                    .get(q + 1..at)
                    .is_some_and(|s| s.bytes().all(is_ws))
                    && self.peek() != Some(b'"') =>
            {
                let lc = pos(q);
                self.fatal(
                    at,
                    Category::Escaping,
                    format!("found {what} after the string that ends at {lc}: if that quote is part of the text, escape it as \\\"; otherwise add the missing ',' or '{closer}'"),
                );
            }
            _ => self.fatal(
                at,
                Category::Syntax,
                format!("expected ',' or '{closer}' but found {what}: add the missing comma"),
            ),
        }
    }

    fn run(&mut self) {
        let mut want = Want::Value;
        loop {
            if !self.skip_ws() {
                return;
            }
            let b = self.peek();
            want = match want {
                Want::Done => {
                    if b.is_some() {
                        let at = self.pos;
                        let what = describe_byte(self.text, at);
                        self.fatal(
                            at,
                            Category::Syntax,
                            format!("unexpected {what} after the end of the JSON value"),
                        );
                    }
                    self.out.value_end = self.pos;
                    return;
                }
                Want::Value => match self.value() {
                    Some(w) => w,
                    None => return,
                },
                Want::KeyOrEnd | Want::Key => {
                    if b == Some(b'}') {
                        if want == Want::Key {
                            let comma = self.stack.last().map_or(self.pos, |f| f.comma_at);
                            self.problem(
                                comma,
                                Category::Syntax,
                                "trailing comma after the last member of an object: remove it"
                                    .to_string(),
                            );
                        }
                        self.close()
                    } else if self.key() {
                        Want::Colon
                    } else {
                        return;
                    }
                }
                Want::Colon => match b {
                    Some(b':') => {
                        self.pos += 1;
                        Want::Value
                    }
                    None => {
                        self.truncated("after a key");
                        return;
                    }
                    Some(_) => {
                        let at = self.pos;
                        let what = describe_byte(self.text, at);
                        self.fatal(
                            at,
                            Category::Syntax,
                            format!("expected ':' after the key but found {what}"),
                        );
                        return;
                    }
                },
                Want::ObjNext => match b {
                    Some(b',') => {
                        if let Some(f) = self.stack.last_mut() {
                            f.comma_at = self.pos;
                        }
                        self.pos += 1;
                        Want::Key
                    }
                    Some(b'}') => self.close(),
                    _ => {
                        self.expected_separator('}');
                        return;
                    }
                },
                Want::ElemOrEnd | Want::Elem => {
                    if b == Some(b']') {
                        if want == Want::Elem {
                            let comma = self.stack.last().map_or(self.pos, |f| f.comma_at);
                            self.problem(
                                comma,
                                Category::Syntax,
                                "trailing comma after the last element of an array: remove it"
                                    .to_string(),
                            );
                        }
                        self.close()
                    } else {
                        self.element();
                        match self.value() {
                            Some(w) => w,
                            None => return,
                        }
                    }
                }
                Want::ArrNext => match b {
                    Some(b',') => {
                        if let Some(f) = self.stack.last_mut() {
                            f.comma_at = self.pos;
                        }
                        self.pos += 1;
                        Want::Elem
                    }
                    Some(b']') => self.close(),
                    _ => {
                        self.expected_separator(']');
                        return;
                    }
                },
            };
            if self.out.fatal {
                return;
            }
        }
    }
}

/// Strictly checks the single JSON value in `text[start..limit]`.
///
/// `open_ended` says the region was not closed (the answer may be truncated);
/// `index_depth` bounds the pointer index (0 = root only).
pub(crate) fn check(
    text: &str,
    start: usize,
    limit: usize,
    open_ended: bool,
    index_depth: usize,
) -> Checked {
    let mut c = Checker {
        text,
        bytes: text.as_bytes(),
        limit: limit.min(text.len()),
        open_ended,
        pos: start,
        out: Checked::default(),
        stack: Vec::new(),
        index_depth,
        last_string_end: None,
    };
    c.run();
    if c.out.suppressed > 0 {
        let n = c.out.suppressed;
        c.out.problems.push(Rejection::whole(
            Category::Syntax,
            format!(
                "{n} more problems of the kinds above are not listed: fix them all, then check the whole answer again"
            ),
        ));
    }
    c.out
}

/// Builds the value with serde_json from a slice the checker accepted.
pub(crate) fn build_value(text: &str, start: usize, end: usize) -> Result<Value, Rejection> {
    let slice = text.get(start..end).unwrap_or("");
    serde_json::from_str::<Value>(slice).map_err(|e| {
        // serde_json counts lines from the slice start; map back to an offset.
        let mut off = start;
        let mut line = 1;
        for (i, ch) in slice.char_indices() {
            if line == e.line() {
                off = start + i;
                break;
            }
            if ch == '\n' {
                line += 1;
            }
        }
        let off = off + e.column().saturating_sub(1);
        pending(
            off,
            Category::Syntax,
            format!("{e}: write a JSON value serde_json accepts (numbers within f64 range)"),
        )
    })
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

/// Agent text quoted in a message: at most `max` chars, escaped so the message stays one line.
pub(crate) fn shown(s: &str, max: usize) -> String {
    let cut: String = s.chars().take(max).collect();
    let mut out = scrub(&cut.escape_debug().to_string());
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
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

fn trimmed_range(text: &str, start: usize, end: usize) -> (usize, usize) {
    let s = text.get(start..end).unwrap_or("");
    let lead = s.len() - s.trim_start_matches([' ', '\t', '\n', '\r']).len();
    let t = s.trim_end_matches([' ', '\t', '\n', '\r']);
    (start + lead, start + t.len().max(lead))
}

/// Whether a region that failed to parse still looks like JSON (and so counts as a candidate).
fn json_looking(text: &str, r: &Region) -> bool {
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

/// Where a scalar could be the whole answer: strict check of `text[start..end]` as one value.
fn whole_value(
    text: &str,
    start: usize,
    end: usize,
    depth: usize,
) -> Option<Result<(Value, Checked), Checked>> {
    let (s, e) = trimmed_range(text, start, end);
    if s >= e {
        return None;
    }
    let checked = check(text, s, e, true, depth);
    if checked.problems.is_empty() && !checked.fatal {
        return Some(match build_value(text, s, e) {
            Ok(v) => Ok((v, checked)),
            Err(r) => {
                let mut c = checked;
                c.problems.push(r);
                c.fatal = true;
                Err(c)
            }
        });
    }
    Some(Err(checked))
}

/// Marks a rejection whose position is still a byte offset (kept in `line`), resolved by [`finish`].
pub(crate) const PENDING: usize = usize::MAX;
const MARK_OPEN: char = '\u{E000}';
const MARK_CLOSE: char = '\u{E001}';
/// At most this many rejections are reported; the rest are counted in one more.
pub(crate) const MAX_REPORTED: usize = 100;

/// A rejection at a byte offset, resolved to line/column by [`finish`] (positions are
/// computed once per answer in one pass, so thousands of problems stay linear).
pub(crate) fn pending(at: usize, category: Category, message: impl Into<String>) -> Rejection {
    Rejection {
        category,
        line: at,
        column: PENDING,
        message: message.into(),
    }
}

/// A position inside a message ("line L column C" once resolved by [`finish`]).
pub(crate) fn pos(at: usize) -> String {
    format!("{MARK_OPEN}{at}{MARK_CLOSE}")
}

/// The byte offset of a rejection not resolved yet.
pub(crate) fn pending_offset(r: &Rejection) -> Option<usize> {
    (r.column == PENDING).then_some(r.line)
}

/// Line and column (as [`super::line_col`]) of every offset in `sorted`, in one pass.
fn resolve(text: &str, sorted: &[usize]) -> HashMap<usize, (usize, usize)> {
    let mut out = HashMap::new();
    let (mut cur, mut line, mut col) = (0usize, 1usize, 1usize);
    for &want in sorted {
        let mut t = want.min(text.len());
        while t > 0 && !text.is_char_boundary(t) {
            t -= 1;
        }
        if t > cur {
            let seg = text.get(cur..t).unwrap_or("");
            match seg.rfind('\n') {
                Some(nl) => {
                    line += seg.matches('\n').count();
                    col = seg.get(nl + 1..).map_or(0, |x| x.chars().count()) + 1;
                }
                None => col += seg.chars().count(),
            }
            cur = t;
        }
        out.insert(want, (line, col));
    }
    out
}

/// Offsets named in a message by [`pos`].
fn marks(message: &str) -> Vec<usize> {
    message
        .split(MARK_OPEN)
        .skip(1)
        .filter_map(|part| part.split(MARK_CLOSE).next().and_then(|d| d.parse().ok()))
        .collect()
}

/// Final form of the rejections returned to the caller: capped, positions resolved, one line each.
pub(crate) fn finish(text: &str, mut v: Vec<Rejection>) -> Vec<Rejection> {
    if v.len() > MAX_REPORTED {
        let extra = v.len() - MAX_REPORTED;
        v.truncate(MAX_REPORTED);
        let category = v.last().map_or(Category::Syntax, |r| r.category);
        v.push(Rejection::whole(
            category,
            format!("{extra} more problems are not listed: fix the ones above, then check the whole answer again"),
        ));
    }
    let mut offsets: Vec<usize> = Vec::new();
    for r in &v {
        offsets.extend(pending_offset(r));
        offsets.extend(marks(&r.message));
    }
    offsets.sort_unstable();
    offsets.dedup();
    let at = resolve(text, &offsets);
    for r in &mut v {
        if let Some(off) = pending_offset(r) {
            let (l, c) = at.get(&off).copied().unwrap_or((0, 0));
            r.line = l;
            r.column = c;
        }
        if r.message.contains(MARK_OPEN) {
            let mut msg = String::with_capacity(r.message.len());
            let mut parts = r.message.split(MARK_OPEN);
            msg.push_str(parts.next().unwrap_or(""));
            for part in parts {
                let mut it = part.splitn(2, MARK_CLOSE);
                let num = it.next().unwrap_or("");
                let rest = it.next().unwrap_or("");
                match num.parse::<usize>().ok().and_then(|n| at.get(&n)) {
                    Some((l, c)) => msg.push_str(&format!("line {l} column {c}")),
                    None => msg.push_str(num),
                }
                msg.push_str(rest);
            }
            r.message = msg;
        }
        if r.message.contains(['\n', '\r', '\u{2028}', '\u{2029}']) {
            r.message = r.message.replace(['\n', '\r', '\u{2028}', '\u{2029}'], " ");
        }
    }
    v
}

/// Agent text (or a library message quoting it) made safe for a message: no position marks.
pub(crate) fn scrub(s: &str) -> String {
    s.replace(MARK_OPEN, "\\u{e000}")
        .replace(MARK_CLOSE, "\\u{e001}")
}

/// `output: json`: the answer's single JSON value (found like the envelope, strict parse, no repair),
/// validated against `schema` when given. Parse errors and schema errors are returned together.
pub fn parse_json(answer: &str, schema: Option<&Value>) -> Result<Value, Vec<Rejection>> {
    parse_json_inner(answer, schema).map_err(|r| finish(answer, r))
}

fn parse_json_inner(answer: &str, schema: Option<&Value>) -> Result<Value, Vec<Rejection>> {
    // Value positions are only needed to place schema errors.
    let depth = if schema.is_some() { MAX_DEPTH } else { 0 };
    let (value, (index, keys), mut rejections) = extract_json(answer, depth)?;
    if let Some(schema) = schema {
        match jsonschema::validator_for(schema) {
            Err(e) => rejections.push(Rejection::whole(
                Category::Schema,
                format!(
                    "the step's JSON Schema is invalid ({}): this is a plan error, not the agent's; fix the plan",
                    scrub(&e.to_string())
                ),
            )),
            Ok(validator) => {
                for err in validator.iter_errors(&value) {
                    let mut ptr = err.instance_path().to_string();
                    let mut use_keys = false;
                    if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } = err.kind()
                        && let Some(first) = unexpected.first() {
                            ptr = format!("{ptr}/{}", ptr_escape(first));
                            use_keys = true;
                        }
                    let shown = if ptr.is_empty() { "/".to_string() } else { ptr.clone() };
                    let msg =
                        format!("value at {shown} does not match the schema: {err}; change it to satisfy the schema");
                    let msg = scrub(&msg);
                    let found = if use_keys { keys.get(&ptr) } else { index.get(&ptr) };
                    match found {
                        Some(&off) => rejections.push(pending(off, Category::Schema, msg)),
                        None => rejections.push(Rejection::whole(Category::Schema, msg)),
                    }
                }
            }
        }
    }
    if rejections.is_empty() {
        Ok(value)
    } else {
        Err(rejections)
    }
}

type Extracted = (
    Value,
    (HashMap<String, usize>, HashMap<String, usize>),
    Vec<Rejection>,
);

/// Finds and strictly parses the single JSON value. Duplicate keys come back as
/// rejections next to the value (so schema errors can be reported with them).
fn extract_json(answer: &str, depth: usize) -> Result<Extracted, Vec<Rejection>> {
    let base = after_bom(answer);
    if answer.get(base..).is_none_or(|s| s.trim().is_empty()) {
        return Err(vec![Rejection::whole(
            Category::Empty,
            "the answer is empty: answer with one JSON value",
        )]);
    }
    // 1. The whole answer is one value (scalars allowed).
    if let Some(Ok((v, c))) = whole_value(answer, base, answer.len(), depth) {
        return Ok((v, (c.index, c.keys), Vec::new()));
    }
    // 2. The whole answer is one fenced block holding one value (scalars allowed).
    if let Some((s, e)) = single_fence(answer) {
        match whole_value(answer, s, e, depth) {
            Some(Ok((v, c))) => return Ok((v, (c.index, c.keys), Vec::new())),
            Some(Err(c)) => {
                let (ts, _) = trimmed_range(answer, s, e);
                let first = answer.as_bytes().get(ts).copied();
                if !matches!(first, Some(b'{' | b'[')) && !c.syntax_ok() {
                    return Err(c.problems);
                }
            }
            None => {
                return Err(vec![pending(
                    s,
                    Category::Empty,
                    "the fenced block is empty: put the JSON value inside it",
                )]);
            }
        }
    }
    // 3. Regions in prose.
    let regions = scan_regions(answer, base, b"{[");
    let mut good: Vec<(Region, Value, Checked)> = Vec::new();
    let mut bad: Vec<(Region, Checked)> = Vec::new();
    for r in regions {
        let c = check(answer, r.start, r.end, !r.closed, depth);
        if c.syntax_ok() {
            match build_value(answer, r.start, c.value_end.max(r.start)) {
                Ok(v) => good.push((r, v, c)),
                Err(e) => {
                    let mut c = c;
                    c.problems.push(e);
                    c.fatal = true;
                    bad.push((r, c));
                }
            }
        } else if !r.closed || json_looking(answer, &r) {
            bad.push((r, c));
        }
    }
    let total = good.len() + bad.len();
    if total == 0 {
        return Err(vec![Rejection::whole(
            Category::NotFound,
            "no JSON value found: answer with exactly one JSON object or array (a ```json fenced block is fine)",
        )]);
    }
    if total > 1 {
        let mut starts: Vec<usize> = good
            .iter()
            .map(|g| g.0.start)
            .chain(bad.iter().map(|b| b.0.start))
            .collect();
        starts.sort_unstable();
        let first = starts.first().copied().unwrap_or(0);
        let lc = pos(first);
        let mut out: Vec<Rejection> = starts
            .iter()
            .skip(1)
            .map(|&s| {
                pending(
                    s,
                    Category::Ambiguous,
                    format!("another JSON value starts here (the first at {lc}): answer with exactly one JSON value"),
                )
            })
            .collect();
        for (_, c) in bad {
            out.extend(c.problems);
        }
        return Err(out);
    }
    if let Some((_, v, c)) = good.pop() {
        if let Some(r) = junk_after(answer, c.value_end) {
            let mut all = c.problems;
            all.insert(0, r);
            return Err(all);
        }
        let dups: Vec<Rejection> = c.problems;
        return Ok((v, (c.index, c.keys), dups));
    }
    match bad.pop() {
        Some((r, c)) => {
            let mut p = c.problems;
            if !r.closed {
                super::envelope::truncated_first(answer, r.start, &mut p);
            }
            Err(p)
        }
        None => Err(vec![Rejection::whole(
            Category::NotFound,
            "no JSON value found",
        )]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_plain_finds_every_special_byte() {
        for special in [b'"', b'\\', b'\n', 0u8, 0x1f] {
            for pos in 0..20 {
                let mut v = vec![b'a'; 20];
                v[pos] = special;
                v.extend_from_slice("é€😀".as_bytes());
                assert_eq!(skip_plain(&v, 0, v.len()), pos);
            }
        }
        let v = "plain ascii and ünïcödé text, no specials".as_bytes();
        assert_eq!(skip_plain(v, 0, v.len()), v.len());
        assert_eq!(skip_plain(v, 3, 10), 10);
    }

    #[test]
    fn scanner_ignores_braces_in_strings() {
        let t = r#"x {"a": "}{\"}"} y {"b": 1}"#;
        let r = scan_regions(t, 0, b"{");
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|r| r.closed));
    }

    #[test]
    fn duplicate_keys_found() {
        let t = r#"{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}"#;
        let c = check(t, 0, t.len(), false, 3);
        let dups = c
            .problems
            .iter()
            .filter(|p| p.category == Category::DuplicateKey)
            .count();
        assert_eq!(dups, 2);
        assert!(!c.fatal);
    }

    #[test]
    fn escaped_keys_are_the_same_key() {
        let t = r#"{"a": 1, "\u0061": 2}"#;
        let c = check(t, 0, t.len(), false, 3);
        assert_eq!(c.problems.len(), 1);
    }

    #[test]
    fn deep_nesting_is_rejected_not_overflowed() {
        let t = "[".repeat(100_000);
        let c = check(&t, 0, t.len(), true, 3);
        assert!(c.fatal);
    }

    #[test]
    fn scalar_whole_answer() {
        assert_eq!(parse_json(" 42 \n", None), Ok(serde_json::json!(42)));
        assert_eq!(
            parse_json("```\n\"hi\"\n```", None),
            Ok(serde_json::json!("hi"))
        );
        assert!(parse_json("the answer is 42", None).is_err());
    }
}
