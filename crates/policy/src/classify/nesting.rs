//! Cheap pre-checks run before handing text to brush-parser, whose PEG parser
//! recurses per nesting level (stack overflow around a few hundred levels) and
//! backtracks exponentially on unbalanced `(`.

/// Longest command text accepted (bytes).
pub(super) const MAX_LEN: usize = 64 * 1024;
/// Deepest `(`/`$(` nesting accepted (the parser backtracks exponentially on it).
pub(super) const MAX_PARENS: usize = 16;
/// Deepest nesting of parens, braces and compound keywords taken together.
pub(super) const MAX_NESTING: usize = 40;

/// Returns the nesting depth of `src`, or why it is too deep or too long to parse.
pub(super) fn too_complex(src: &str) -> Result<usize, String> {
    // brush-parser panics on a file-descriptor number that does not fit (`333…3>f`).
    let b = src.as_bytes();
    let mut run = 0usize;
    for (k, c) in b.iter().enumerate() {
        if c.is_ascii_digit() {
            run += 1;
        } else {
            if run > 9
                && matches!(c, b'<' | b'>')
                && (k == run || !b[k - run - 1].is_ascii_alphanumeric())
            {
                return Err("a redirection names a file descriptor too large to be one".to_owned());
            }
            run = 0;
        }
    }
    // ... and on a tilde directory-stack index that does not fit (`~1233…3`).
    for (k, _) in src.match_indices('~') {
        let rest = &b[k + 1..];
        let rest = rest
            .strip_prefix(b"+")
            .or_else(|| rest.strip_prefix(b"-"))
            .unwrap_or(rest);
        if rest.iter().take_while(|c| c.is_ascii_digit()).count() > 9 {
            return Err("a `~N` directory-stack index is too large".to_owned());
        }
    }
    // brush-parser can blow up (gigabytes, then an abort) on some inputs with
    // stray control characters, e.g. `<<\r<<-$[[$[-` found by fuzzing; bash
    // scripts in a plan have no business carrying them, so refuse to parse.
    if let Some(c) = src
        .chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\t')
    {
        return Err(format!(
            "contains the control character U+{:04X}; plangate does not parse it",
            u32::from(c)
        ));
    }
    if src.len() > MAX_LEN {
        return Err(format!(
            "command is {} bytes long, above the {MAX_LEN}-byte limit",
            src.len()
        ));
    }
    let (parens, total) = depths(src);
    if parens > MAX_PARENS {
        return Err(format!(
            "parentheses nest {parens} deep, above the limit of {MAX_PARENS}"
        ));
    }
    if total > MAX_NESTING {
        return Err(format!(
            "constructs nest {total} deep, above the limit of {MAX_NESTING}"
        ));
    }
    Ok(total)
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
fn tokens(src: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut word_start: Option<usize> = None;
    for (i, c) in src.char_indices() {
        if is_word_char(c) {
            word_start.get_or_insert(i);
            continue;
        }
        if let Some(start) = word_start.take() {
            out.extend(src.get(start..i));
        }
        out.extend(src.get(i..i + c.len_utf8()));
    }
    if let Some(start) = word_start {
        out.extend(src.get(start..));
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '[' | ']')
}

#[cfg(test)]
#[path = "nesting_tests.rs"]
mod tests;
