//! GitHub-flavoured Markdown escaping for names plangate does not control
//! (file names, step ids, error text): a name survives backticks, pipes,
//! brackets, HTML and entities, in a table cell or in running text. The step
//! summary, the pull-request comment and `diff-summary.md` all escape here;
//! tests/integration/formats.rs renders them with a GFM renderer to prove it.

/// Where the escaped text goes: a table cell must also escape `|` (GFM
/// splits cells before it reads code spans; `\|` is read back as `|`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    /// Running text: a paragraph, a list item, a heading.
    Text,
    /// A table cell.
    Cell,
}

/// `s` as an inline code span showing exactly `s` (line breaks become
/// spaces, as GFM does inside code spans anyway): the fence is one backtick
/// longer than the longest run inside, padded with a space where GFM would
/// otherwise eat or merge a backtick or a space.
pub(crate) fn code(s: &str, at: At) -> String {
    let s: String = s.replace(['\n', '\r'], " ").chars().map(visible).collect();
    if s.is_empty() {
        return "` `".to_owned();
    }
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let all_spaces = s.chars().all(|c| c == ' ');
    let pad = if !all_spaces
        && (s.starts_with('`') || s.ends_with('`') || (s.starts_with(' ') && s.ends_with(' ')))
    {
        " "
    } else {
        ""
    };
    let span = format!("{fence}{pad}{s}{pad}{fence}");
    match at {
        At::Text => span,
        At::Cell => span.replace('|', "\\|"),
    }
}

/// `s` as literal text: every character inline Markdown could read as
/// syntax (emphasis, strike-through, links, HTML, entities, code, cell
/// separators) is backslash-escaped; line breaks become spaces (so no
/// block syntax can start).
pub(crate) fn text(s: &str, _at: At) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(visible(c)),
        }
    }
    out
}

/// A control character (a terminal escape, a bell: a name may hold any
/// byte) as its visible picture (`␛`, `␇`; U+FFFD for the C1 ones), so
/// that no Markdown plangate writes drives the terminal it is shown in.
/// Other characters as they are.
fn visible(c: char) -> char {
    match u32::from(c) {
        n @ 0..=0x1f if c != '\t' => char::from_u32(0x2400 + n).unwrap_or('\u{fffd}'),
        0x7f => '\u{2421}',
        0x80..=0x9f => '\u{fffd}',
        _ => c,
    }
}

/// `s` as HTML text (inside `<summary>`, where Markdown is not read): `&`,
/// `<`, `>`, quotes as entities; line breaks become spaces.
pub(crate) fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(visible(c)),
        }
    }
    out
}

/// The rows of the Markdown table that follows the line `marker` in `doc`
/// (its header and separator skipped), each row's cells trimmed; none when
/// the marker is missing. Tests hold the docs' tables to the code with it.
#[cfg(test)]
pub(crate) fn table_after(doc: &str, marker: &str) -> Vec<Vec<String>> {
    doc.lines()
        .skip_while(|l| l.trim() != marker)
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let inner = l.trim().trim_start_matches('|').trim_end_matches('|');
            inner.split('|').map(|c| c.trim().to_owned()).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_show_as_pictures_and_drive_no_terminal() {
        let name = "e\u{1b}[31mred\u{1b}]0;t\u{7}\u{9b}x\u{7f}";
        for out in [code(name, At::Cell), text(name, At::Text), html(name)] {
            assert!(!out.chars().any(|c| c.is_control()), "{out:?}");
            assert!(
                out.contains('\u{241b}') && out.contains('\u{2407}'),
                "{out:?}"
            );
        }
        assert_eq!(code("a\tb", At::Text), "`a\tb`");
    }

    #[test]
    fn code_spans_hold_backticks_and_pipes() {
        assert_eq!(code("a.txt", At::Text), "`a.txt`");
        assert_eq!(code("a`b", At::Text), "``a`b``");
        assert_eq!(code("`x`", At::Text), "`` `x` ``");
        assert_eq!(code("a|b", At::Text), "`a|b`");
        assert_eq!(code("a|b", At::Cell), "`a\\|b`");
        assert_eq!(code(" a ", At::Text), "`  a  `");
        assert_eq!(code("", At::Text), "` `");
        assert_eq!(code("l1\nl2", At::Text), "`l1 l2`");
    }

    #[test]
    fn html_is_text() {
        assert_eq!(
            html("<b>a&b</b>\n'\""),
            "&lt;b&gt;a&amp;b&lt;/b&gt; &#39;&quot;"
        );
    }

    #[test]
    fn text_is_literal() {
        assert_eq!(text("[x](y) <b>", At::Text), "\\[x\\](y) \\<b\\>");
        assert_eq!(text("a\nb", At::Cell), "a b");
    }
}
