//! Brace expansion (`{a,b}`, `{1..3}`) of one raw word, done first as bash
//! does it, so `rm -rf {,}/` is read as `rm -rf / /` and `rm -rf /{etc,usr}`
//! as `rm -rf /etc /usr`. Braces inside quotes, escapes, `${...}`, `$(...)`
//! and backquotes do not expand.

use brush_parser::word::WordPiece;

/// Most words one word may expand to; beyond it the word stays as written
/// (and counts as a glob: some paths below its directory).
pub(super) const MAX_WORDS: usize = 64;
/// Deepest nesting of brace expressions followed.
const MAX_DEPTH: usize = 8;

/// The words `raw` expands to (itself when it holds no brace expansion);
/// None when it expands to more than [`MAX_WORDS`].
pub(super) fn expand(raw: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    expand_into(raw, &mut out, 0)?;
    Some(out)
}

/// Whether an alternative of a brace expression in `raw` can change the
/// folder a path names (`{/etc/x,y}`, `{..,a}`, `{~,a}`): a word that
/// expands to more than [`MAX_WORDS`] cannot then be judged as written.
pub(super) fn alternative_moves(raw: &str) -> bool {
    moves_at(raw, 0)
}

fn moves_at(raw: &str, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    let mut rest = raw;
    while let Some((_, close, alternatives)) = find(rest) {
        let moves =
            |a: &String| a.contains('/') || a.starts_with(['~', '.']) || moves_at(a, depth + 1);
        if alternatives.iter().any(moves) {
            return true;
        }
        let Some(r) = rest.get(close + 1..) else {
            return true;
        };
        rest = r;
    }
    false
}

fn expand_into(raw: &str, out: &mut Vec<String>, depth: usize) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let Some((open, close, alternatives)) = find(raw) else {
        out.push(raw.to_string());
        return (out.len() <= MAX_WORDS).then_some(());
    };
    let pre = raw.get(..open)?;
    let post = raw.get(close + 1..)?;
    if alternatives.len() > MAX_WORDS {
        return None;
    }
    for alt in alternatives {
        expand_into(&format!("{pre}{alt}{post}"), out, depth + 1)?;
    }
    Some(())
}

/// The first brace expression: (index of `{`, index of `}`, alternatives).
fn find(raw: &str) -> Option<(usize, usize, Vec<String>)> {
    let text = raw.contains('{').then(|| unquoted(raw))?;
    let at = |i: &usize| raw.as_bytes()[*i] == b'{' && text[*i];
    (0..raw.len())
        .filter(at)
        .find_map(|i| expression_at(raw, i, &text))
}

/// Which bytes of `raw` are plain unquoted text, where braces expand (not
/// quotes, escapes, `${...}`, `$(...)`, backquotes), as brush-parser reads
/// the word; none when it cannot.
fn unquoted(raw: &str) -> Vec<bool> {
    let mut text = vec![false; raw.len()];
    let pieces = super::words::parse_guarded(|o| brush_parser::word::parse(raw, o));
    for p in pieces.iter().flatten() {
        if let (WordPiece::Text(_), Some(bytes)) =
            (&p.piece, text.get_mut(p.start_index..p.end_index))
        {
            bytes.fill(true);
        }
    }
    text
}

/// The brace expression opening at `open`, if it is one (a top-level comma or a sequence).
fn expression_at(raw: &str, open: usize, text: &[bool]) -> Option<(usize, usize, Vec<String>)> {
    let b = raw.as_bytes();
    let mut depth = 0usize;
    let mut commas = Vec::new();
    let mut i = open + 1;
    while i < b.len() {
        if !text[i] {
            i += 1;
            continue;
        }
        match b[i] {
            b'{' => depth += 1,
            b'}' if depth > 0 => depth -= 1,
            b'}' if commas.is_empty() => {
                return sequence(raw.get(open + 1..i)?).map(|s| (open, i, s));
            }
            b'}' => {
                // The alternatives lie between the braces and the top-level commas.
                let cuts: Vec<usize> = [open].into_iter().chain(commas).chain([i]).collect();
                let part = |w: &[usize]| raw.get(w[0] + 1..w[1]).map(str::to_string);
                return Some((open, i, cuts.windows(2).map(part).collect::<Option<_>>()?));
            }
            b',' if depth == 0 => commas.push(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// `{1..5}`, `{a..e}`, `{10..1..2}`.
fn sequence(inner: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = inner.split("..").collect();
    let (from, to, step) = match parts.as_slice() {
        [a, b] => (*a, *b, 1i64),
        [a, b, s] => (*a, *b, s.parse::<i64>().ok()?.checked_abs()?.max(1)),
        _ => return None,
    };
    if let (Ok(x), Ok(y)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let count = x.abs_diff(y) / step.unsigned_abs() + 1;
        if count > MAX_WORDS as u64 + 1 {
            return Some(vec![String::new(); MAX_WORDS + 1]);
        }
        let dir = if y >= x { step } else { -step };
        return Some(
            (0..count)
                .map(|k| (x + dir * i64::try_from(k).unwrap_or(0)).to_string())
                .collect(),
        );
    }
    let (x, y) = (single_char(from)?, single_char(to)?);
    let mut out: Vec<String> = (x.min(y)..=x.max(y)).map(String::from).collect();
    if x > y {
        out.reverse();
    }
    Some(out)
}

fn single_char(s: &str) -> Option<char> {
    let mut it = s.chars();
    let c = it.next()?;
    (it.next().is_none() && c.is_ascii_alphabetic()).then_some(c)
}

#[cfg(test)]
#[path = "braces_tests.rs"]
mod tests;
