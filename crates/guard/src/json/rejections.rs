//! Rejections at byte offsets: placed while checking, resolved to line and
//! column in one pass per answer (so thousands of problems stay linear),
//! capped, and made safe to show (one line, no position marks).

use super::{Category, Rejection};
use std::collections::HashMap;

/// Marks a rejection whose position is still a byte offset (kept in `line`), resolved by [`finish`].
pub(crate) const PENDING: usize = usize::MAX;
pub(super) const MARK_OPEN: char = '\u{E000}';
pub(super) const MARK_CLOSE: char = '\u{E001}';
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

/// Agent text quoted in a message: at most `max` chars, escaped so the message stays one line.
pub(crate) fn shown(s: &str, max: usize) -> String {
    let cut: String = s.chars().take(max).collect();
    let mut out = scrub(&cut.escape_debug().to_string());
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// The same rejection with every byte offset (its position and the positions named in its
/// message) passed through `f`: for rejections found in a repaired copy of the answer.
pub(crate) fn remap(mut r: Rejection, f: impl Fn(usize) -> usize) -> Rejection {
    if let Some(off) = pending_offset(&r) {
        r.line = f(off);
    }
    if r.message.contains(MARK_OPEN) {
        let mut msg = String::with_capacity(r.message.len());
        let mut parts = r.message.split(MARK_OPEN);
        msg.push_str(parts.next().unwrap_or(""));
        for part in parts {
            let mut it = part.splitn(2, MARK_CLOSE);
            let num = it.next().unwrap_or("");
            let rest = it.next().unwrap_or("");
            match num.parse::<usize>() {
                Ok(n) => msg.push_str(&pos(f(n))),
                Err(_) => msg.push_str(num),
            }
            msg.push_str(rest);
        }
        r.message = msg;
    }
    r
}
