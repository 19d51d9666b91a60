//! Diagnostics of plan and policy files: the "did you mean" suggestion (the
//! type and its constructor at a YAML position are `crate::model::Diagnostic`
//! and `Diagnostic::at`).

/// The closest candidate to `word` by edit distance, if it is close enough to be a typo.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = levenshtein(&word.to_lowercase(), &c.to_lowercase());
        let longest = c.chars().count().max(word.chars().count());
        // One edit per three characters, and a swapped pair (two edits) from five on.
        let limit = (longest / 3).max(1).max(if longest >= 5 { 2 } else { 1 });
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(
            did_you_mean("comand", ["command", "timeout"]),
            Some("command")
        );
        assert_eq!(
            did_you_mean("dependencys", ["dependencies", "env"]),
            Some("dependencies")
        );
        assert_eq!(did_you_mean("zzz", ["command", "timeout"]), None);
    }
}
