//! Cheap pre-checks run before handing text to brush-parser, whose PEG parser
//! recurses per nesting level (stack overflow around a few hundred levels) and
//! backtracks exponentially on unbalanced `(`.

/// Longest command text accepted (bytes).
pub(super) const MAX_LEN: usize = 64 * 1024;
/// Deepest `(`/`$(` nesting accepted (the parser backtracks exponentially on it).
pub(super) const MAX_PARENS: usize = 16;
/// Deepest nesting of parens, braces and compound keywords taken together.
pub(super) const MAX_NESTING: usize = 40;
/// Deepest nesting of `[` (see [`bracket_depth`]); the parser overflows its
/// stack on some 4,000 (`a[a[a[…`, `$[ $[…`).
pub(super) const MAX_BRACKETS: usize = 16;

/// Returns the nesting depth of `src`, or why it is too deep or too long to parse.
pub(super) fn too_complex(src: &str) -> Result<usize, String> {
    // brush-parser panics on a file-descriptor number that does not fit (`333…3>f`)...
    let fd = |t: &str| t.len() > 9 && t.bytes().all(|c| c.is_ascii_digit());
    let alnum_runs = src.split_inclusive(|c: char| !c.is_ascii_alphanumeric());
    if alnum_runs
        .filter_map(|t| t.strip_suffix(['<', '>']))
        .any(fd)
    {
        return Err("a redirection names a file descriptor too large to be one".to_owned());
    }
    // ... and on a tilde directory-stack index that does not fit (`~1233…3`).
    let index = |t: &str| t.bytes().take_while(u8::is_ascii_digit).count();
    let stack_index = |t: &str| index(t.strip_prefix(['+', '-']).unwrap_or(t)) > 9;
    if src.split('~').skip(1).any(stack_index) {
        return Err("a `~N` directory-stack index is too large".to_owned());
    }
    // brush-parser can blow up (gigabytes, then an abort) on some inputs with
    // stray control characters, e.g. `<<\r<<-$[[$[-` found by fuzzing; bash
    // scripts in a plan have no business carrying them, so refuse to parse.
    let stray = |c: &char| c.is_control() && *c != '\n' && *c != '\t';
    if let Some(c) = src.chars().find(stray) {
        return Err(format!(
            "contains the control character U+{:04X}; plangate does not parse it",
            u32::from(c)
        ));
    }
    let (parens, total) = depths(src);
    let limits = [
        ("bytes of text", src.len(), MAX_LEN),
        ("levels of nested parentheses", parens, MAX_PARENS),
        ("levels of nested constructs", total, MAX_NESTING),
        ("levels of nested `[`", bracket_depth(src), MAX_BRACKETS),
    ];
    if let Some((what, n, max)) = limits.into_iter().find(|(_, n, max)| n > max) {
        return Err(format!("{n} {what}, above the limit of {max}"));
    }
    Ok(total)
}

/// Maximum running depth of `[`: those of a word close at its end, those
/// of `$[` (old arithmetic) span words. Quotes are ignored (stricter).
fn bracket_depth(src: &str) -> usize {
    let mut open: Vec<bool> = Vec::new();
    let (mut max, mut prev) = (0, ' ');
    for c in src.chars() {
        match c {
            '[' => open.push(prev == '$'),
            ']' => {
                open.pop();
            }
            c if c.is_whitespace() => {
                while open.last() == Some(&false) {
                    open.pop();
                }
            }
            _ => {}
        }
        max = max.max(open.len());
        prev = c;
    }
    max
}

/// Maximum running depth of parens, and of parens + braces + compound keywords
/// (+ runs of `!`, which the parser also nests).
/// Quotes are deliberately ignored: over-counting only makes the check stricter.
fn depths(src: &str) -> (usize, usize) {
    let (mut parens, mut others, mut bangs) = (0usize, 0usize, 0usize);
    let (mut max_parens, mut max_total) = (0usize, 0usize);
    for token in tokens(src) {
        match token {
            "!" => bangs += 1,
            " " | "\t" => {}
            _ => bangs = 0,
        }
        match token {
            "(" => parens += 1,
            ")" => parens = parens.saturating_sub(1),
            "{" | "if" | "case" | "while" | "until" | "for" | "select" | "[[" => others += 1,
            "}" | "fi" | "esac" | "done" | "]]" => others = others.saturating_sub(1),
            _ => {}
        }
        max_parens = max_parens.max(parens);
        max_total = max_total.max(parens + others + bangs);
    }
    (max_parens, max_total)
}

/// Splits into runs of word characters and single other characters.
fn tokens(src: &str) -> impl Iterator<Item = &str> {
    let mut rest = src;
    std::iter::from_fn(move || {
        let c = rest.chars().next()?;
        let len = if is_word_char(c) {
            rest.find(|c| !is_word_char(c)).unwrap_or(rest.len())
        } else {
            c.len_utf8()
        };
        let (token, tail) = rest.split_at(len);
        rest = tail;
        Some(token)
    })
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '[' | ']')
}

#[cfg(test)]
#[path = "nesting_tests.rs"]
mod tests;
