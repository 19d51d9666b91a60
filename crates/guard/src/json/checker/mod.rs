//! The strict checker: exactly one JSON value, every extension (comments,
//! trailing commas, single quotes, NaN, …) named with its position, never
//! repaired; duplicate keys found; an index of value and key positions for
//! placing schema errors. Iterative and linear.

mod tokens;

use super::regions::{is_ws, trimmed_range};
use super::rejections::{MARK_CLOSE, MARK_OPEN, MAX_REPORTED, pending, pos, shown};
use super::{Category, Rejection};
use serde_json::Value;
use std::collections::HashMap;

/// Most value/key positions remembered per region (schema errors past them point at the value's root).
const MAX_INDEX: usize = 50_000;

/// Deepest nesting accepted (serde_json's own limit).
pub(crate) const MAX_DEPTH: usize = 128;

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
    pub(crate) fn syntax_ok(&self) -> bool {
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

pub(crate) fn ptr_escape(key: &str) -> String {
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

/// Where a scalar could be the whole answer: strict check of `text[start..end]` as one value.
pub(crate) fn whole_value(
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
