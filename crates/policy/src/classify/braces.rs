//! Brace expansion (`{a,b}`, `{1..3}`) of one raw word, done first as bash
//! does it, so `rm -rf {,}/` is read as `rm -rf / /` and `rm -rf /{etc,usr}`
//! as `rm -rf /etc /usr`. brush-parser finds the expressions (braces inside
//! quotes, escapes and expansions do not expand); this file multiplies them out.

use brush_parser::word::{BraceExpressionMember as Member, BraceExpressionOrText as Piece};

/// Most words one word may expand to; beyond it the word stays as written
/// (and counts as a glob: some paths below its directory).
const MAX_WORDS: usize = 64;

/// The words `raw` expands to (itself when it holds no brace expansion);
/// None when it expands to more than [`MAX_WORDS`].
pub(super) fn expand(raw: &str) -> Option<Vec<String>> {
    let (text, hidden) = hide_long_numbers(raw)?;
    let parsed =
        super::words::parse_guarded(|o| brush_parser::word::parse_brace_expansions(&text, o));
    let Ok(Some(pieces)) = parsed else {
        return Some(vec![raw.to_string()]);
    };
    let mut words = concat(&pieces)?;
    for w in &mut words {
        for (c, run) in &hidden {
            *w = w.replace(*c, run);
        }
    }
    Some(words)
}

/// brush-parser panics on a sequence bound beyond 64 bits (`{1..99…9}`),
/// which bash reads as text: each run of digits too long to be one is
/// swapped for a character the word does not hold while it parses.
fn hide_long_numbers(raw: &str) -> Option<(String, Vec<(char, &str)>)> {
    let mut free = ('\u{E000}'..='\u{F8FF}').filter(|c| !raw.contains(*c));
    let (mut text, mut hidden, mut rest) = (String::new(), Vec::new(), raw);
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let after = &rest[start..];
        let run = &after[..after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len())];
        text.push_str(&rest[..start]);
        if run.parse::<i64>().is_ok() {
            text.push_str(run);
        } else {
            let c = free.next()?;
            text.push(c);
            hidden.push((c, run));
        }
        rest = &after[run.len()..];
    }
    text.push_str(rest);
    Some((text, hidden))
}

/// Every word a run of text and brace expressions gives, in bash's order.
fn concat(pieces: &[Piece]) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    for piece in pieces {
        let alternatives = match piece {
            Piece::Text(t) => vec![t.clone()],
            Piece::Expr(members) => {
                let mut all = Vec::new();
                for m in members {
                    all.extend(member(m)?);
                }
                all
            }
        };
        out = out
            .iter()
            .flat_map(|o| alternatives.iter().map(move |a| format!("{o}{a}")))
            .collect();
        if out.len() > MAX_WORDS {
            return None;
        }
    }
    Some(out)
}

fn member(m: &Member) -> Option<Vec<String>> {
    let (start, end, step) = match m {
        Member::Child(pieces) => return concat(pieces),
        Member::NumberSequence {
            start,
            end,
            increment,
        } => (*start, *end, *increment),
        Member::CharSequence {
            start,
            end,
            increment,
        } => (
            i64::from(u32::from(*start)),
            i64::from(u32::from(*end)),
            *increment,
        ),
    };
    // bash reads a step of 0 as 1, and a negative one as its size.
    let step = step.checked_abs()?.max(1);
    let count = start.abs_diff(end) / step.unsigned_abs() + 1;
    if count > MAX_WORDS as u64 {
        return None;
    }
    let dir = if end >= start { step } else { -step };
    let chars = matches!(m, Member::CharSequence { .. });
    let word = |k: i64| match u32::try_from(start + dir * k).ok() {
        Some(c) if chars => char::from_u32(c).map(String::from),
        _ => Some((start + dir * k).to_string()),
    };
    (0..count as i64).map(word).collect()
}

#[cfg(test)]
#[path = "braces_tests.rs"]
mod tests;
