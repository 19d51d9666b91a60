//! Globs from plans and policy files, compiled without a panic (pure).
//!
//! `globset` turns a glob into a regular expression; a glob nested deeply
//! enough (`{{{…}}}`) passes the regex engine's nesting limit, and
//! `Glob::compile_matcher` panics on that. Every glob plangate compiles goes
//! through here: the nesting is bounded first (a clear error), and matchers
//! are built as one-glob sets, whose compile errors are values.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Deepest `{…}` nesting accepted in a glob.
pub const MAX_BRACE_DEPTH: usize = 32;

/// Why a glob is refused: too deeply nested, or not a glob `globset` accepts.
pub fn check_depth(pattern: &str) -> Result<(), String> {
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut escaped = false;
    let mut in_class = false;
    for c in pattern.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '{' if !in_class => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            '}' if !in_class => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_BRACE_DEPTH {
        return Err(format!(
            "`{{…}}` groups are nested {deepest} deep; at most {MAX_BRACE_DEPTH} are allowed"
        ));
    }
    Ok(())
}

/// One glob as a matcher; `literal_separator`: `*` stops at `/` (paths matched
/// segment by segment).
pub fn matcher(pattern: &str, literal_separator: bool) -> Result<GlobSet, String> {
    check_depth(pattern)?;
    let glob = GlobBuilder::new(pattern)
        .literal_separator(literal_separator)
        .backslash_escape(true)
        .build()
        .map_err(|e| e.kind().to_string())?;
    GlobSetBuilder::new()
        .add(glob)
        .build()
        .map_err(|e| e.kind().to_string())
}

/// A set of globs (`globset::Glob::new` semantics); None when the list is empty.
pub fn set<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Result<Option<GlobSet>, String> {
    let mut b = GlobSetBuilder::new();
    let mut any = false;
    for p in patterns {
        check_depth(p).map_err(|why| format!("`{p}`: {why}"))?;
        b.add(globset::Glob::new(p).map_err(|e| format!("`{p}`: {}", e.kind()))?);
        any = true;
    }
    if !any {
        return Ok(None);
    }
    b.build().map(Some).map_err(|e| e.kind().to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn nested(n: usize) -> String {
        let mut s = String::new();
        for _ in 0..n {
            s.push_str("{a,");
        }
        s.push('b');
        for _ in 0..n {
            s.push('}');
        }
        s
    }

    #[test]
    fn deep_nesting_is_an_error_never_a_panic() {
        for n in [33, 130, 5000] {
            let e = matcher(&nested(n), true).unwrap_err();
            assert!(e.contains("at most 32"), "{e}");
            assert!(set([nested(n).as_str()]).is_err());
        }
        let ok = matcher(&nested(32), true).unwrap();
        assert!(ok.is_match("a"));
        assert!(ok.is_match("b"));
        // Braces inside a class or escaped do not count.
        assert!(check_depth(&"[{]".repeat(100)).is_ok());
        assert!(check_depth(&"\\{".repeat(100)).is_ok());
    }
}
