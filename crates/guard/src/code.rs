//! `output: code`: extract the single fenced code block of an agent answer,
//! or refuse with the exact line and column of what is wrong.
//!
//! Owns fence recognition, candidate selection and language aliases. Must not
//! guess: it never repairs a fence, never completes an unterminated block,
//! never picks one of two candidates, never looks inside a block for another
//! block. Pure: no I/O.
//!
//! # Why a line scanner and not pulldown-cmark
//!
//! Fenced code blocks (CommonMark 0.31, section 4.5) are a line-level
//! construct, so a careful scanner over lines is exact for what we accept,
//! and it keeps the position of every fence, which the rejections need
//! (pulldown-cmark gives ranges for blocks it accepted, not for the
//! suspicious line inside one, and it silently closes an unterminated block
//! at the end of the document, which we must refuse). Container blocks are
//! deliberately not interpreted: a fence inside a block quote (`> ```) or
//! indented 4+ columns (for instance in a deeply nested list) is not
//! recognised; if no block is found, the `not_found` rejection points at such
//! a line and asks for an unindented fence.
//!
//! # Rules
//!
//! - Line endings are `\n` and `\r\n` (a lone `\r` is an ordinary character).
//!   A BOM at the very start is ignored; lines and columns are counted without
//!   it (columns in characters, 1-based).
//! - Opening fence: 3+ backticks or 3+ tildes, indented at most 3 columns
//!   (a tab counts to the next multiple of 4, so any tab makes it 4+); the
//!   rest of the line is the info string, whose first word is the language;
//!   a backtick fence's info string may not contain a backtick (otherwise the
//!   line is prose, e.g. inline code).
//! - Closing fence: the same character, at least as many, indented at most 3
//!   columns, followed only by spaces and tabs. As in CommonMark a *longer*
//!   bare fence closes the block.
//! - Content: the lines in between, bytes unchanged (including `\r`), except
//!   that up to the opening fence's indentation in spaces is removed from each
//!   line (CommonMark). The accepted value is then `trim()`med: leading and
//!   trailing Unicode whitespace removed, as Python's `str.strip()` in design
//!   000 (differences: none for ASCII; Python also strips U+001C..U+001F).
//!   Stripping is the design's choice: the block's first-line indentation and
//!   trailing newline are not part of the value.
//!
//! # Nested fences (the decision)
//!
//! Models often put a block inside a block. Per CommonMark only a bare fence
//! at least as long as the opening one closes a block; everything else is
//! content. We accept content exactly when the nesting is unambiguous:
//!
//! - a same-character line of at least the opening length that is *not* a
//!   valid closing fence (it has an info string, or is indented 4+ columns)
//!   is refused as `ambiguous`: the model almost certainly meant a nested
//!   block and CommonMark will end the outer block at the nested closing fence;
//! - same-character fences *shorter* than the opening one are accepted as
//!   content only when they form balanced nested blocks (each nested opening
//!   fence is closed by a bare fence, shorter than the enclosing one); a stray
//!   shorter fence is refused as `ambiguous` (it was probably meant to close
//!   the block, or a nested block was left open);
//! - fences of the other character are plain content and ignored.
//!
//! The remedy in every message is the same: open and close the outer block
//! with a longer fence (````) or with the other character (`~~~`).
//!
//! # Candidates
//!
//! With a step language, the candidates are the blocks whose language is the
//! step's (compared with [`canonical_language`]) and the untagged blocks;
//! without one, every block. Empty (whitespace-only) candidates are not
//! values (they are ignored when another candidate has content, refused as
//! `empty` when all candidates are empty); exactly one non-empty candidate is
//! accepted. Structural problems
//! (unterminated or ambiguous fences) are checked in *every* block, tagged or
//! not, because they change where the following blocks begin and end; they
//! are reported first, in answer order, at most `MAX_PROBLEMS` (10) of them.

#![deny(clippy::indexing_slicing, clippy::string_slice)]

use super::{Category, Rejection};

/// `output: code`: the single fenced code block of the answer.
pub fn parse_code(answer: &str, language: Option<&str>) -> Result<String, Vec<Rejection>> {
    let text = answer.strip_prefix('\u{feff}').unwrap_or(answer);
    let lines = split_lines(text);
    let scan = scan_blocks(&lines);
    if !scan.problems.is_empty() {
        // Scan order: a block's inner problems (the likely cause) before its `truncated`.
        let mut problems = scan.problems;
        problems.truncate(MAX_PROBLEMS);
        return Err(problems);
    }
    select(text.trim().is_empty(), &lines, &scan, language)
}

/// Canonical language name for an info-string word.
///
/// Case-insensitive; unknown words are returned lowercased. Shells are kept
/// apart on purpose: `bash` is bash, `sh`/`shell`/`posix` are POSIX sh, `zsh`
/// is zsh, and `console`/`shell-session` (prompts plus output) is its own
/// thing; a `bash` step therefore does not accept an `sh` block (bashisms run
/// under `sh` break, and the retry costs less than a wrong script). Python 2 is
/// kept apart from Python (3).
pub fn canonical_language(word: &str) -> String {
    let lower = word.trim().to_lowercase();
    let canonical = match lower.as_str() {
        "py" | "py3" | "python" | "python3" => "python",
        "py2" | "python2" => "python2",
        "bash" => "bash",
        "sh" | "shell" | "posix" => "sh",
        "zsh" => "zsh",
        "console" | "shell-session" | "shellsession" => "console",
        "ps1" | "pwsh" | "powershell" => "powershell",
        "yml" | "yaml" => "yaml",
        "rs" | "rust" => "rust",
        "js" | "javascript" | "node" | "nodejs" | "mjs" | "cjs" => "javascript",
        "ts" | "typescript" => "typescript",
        "json" => "json",
        "toml" => "toml",
        "md" | "markdown" => "markdown",
        "dockerfile" | "docker" | "containerfile" => "dockerfile",
        "make" | "makefile" | "mk" => "makefile",
        "sql" => "sql",
        "go" | "golang" => "go",
        "rb" | "ruby" => "ruby",
        "c" => "c",
        "cpp" | "c++" | "cxx" | "cc" | "hpp" => "cpp",
        "cs" | "c#" | "csharp" => "csharp",
        "java" => "java",
        "kt" | "kts" | "kotlin" => "kotlin",
        "diff" | "patch" | "udiff" => "diff",
        "html" | "htm" => "html",
        "xml" => "xml",
        "css" => "css",
        "txt" | "text" | "plain" | "plaintext" => "text",
        other => other,
    };
    canonical.to_string()
}

/// One line of the answer, without its line ending.
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    /// The line without `\n` / `\r\n`.
    body: &'a str,
    /// The line with its ending, as in the answer.
    raw: &'a str,
}

impl Line<'_> {
    /// 1-based line and column (in characters) of a byte in this line; `index` is the line's index.
    /// Computed from the line alone, so rejections cost O(line), not O(answer).
    fn pos(&self, index: usize, byte_in_line: usize) -> Pos {
        let column = self
            .body
            .get(..byte_in_line)
            .map_or(0, |before| before.chars().count())
            + 1;
        Pos {
            line: index + 1,
            column,
        }
    }
}

/// A position in the answer, as in [`Rejection`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pos {
    line: usize,
    column: usize,
}

impl Pos {
    fn reject(self, category: Category, message: String) -> Rejection {
        Rejection {
            category,
            line: self.line,
            column: self.column,
            message,
        }
    }
}

/// At most this many structural rejections are reported: the first ones are
/// the causes, the rest mostly consequences, and the retry prompt stays short.
const MAX_PROBLEMS: usize = 10;

fn split_lines(text: &str) -> Vec<Line<'_>> {
    let mut lines = Vec::new();
    for raw in text.split_inclusive('\n') {
        let body = raw.strip_suffix('\n').unwrap_or(raw);
        let body = body.strip_suffix('\r').unwrap_or(body);
        lines.push(Line { body, raw });
    }
    lines
}

/// A line that starts (after indentation) with a run of 3+ backticks or tildes.
#[derive(Debug, Clone, Copy)]
struct FenceLike<'a> {
    /// Indentation in columns (tabs to the next multiple of 4).
    indent: usize,
    /// Indentation in bytes (where the run starts).
    indent_bytes: usize,
    /// Indentation removable from content lines: leading spaces only.
    spaces: usize,
    ch: char,
    len: usize,
    /// Everything after the run.
    info: &'a str,
}

impl FenceLike<'_> {
    fn parse(body: &str) -> Option<FenceLike<'_>> {
        let mut indent = 0;
        let mut indent_bytes = 0;
        let mut spaces = 0;
        let mut only_spaces = true;
        for c in body.chars() {
            match c {
                ' ' => {
                    indent += 1;
                    if only_spaces {
                        spaces += 1;
                    }
                }
                '\t' => {
                    indent += 4 - indent % 4;
                    only_spaces = false;
                }
                _ => break,
            }
            indent_bytes += 1;
        }
        let rest = body.get(indent_bytes..)?;
        let ch = rest.chars().next()?;
        if ch != '`' && ch != '~' {
            return None;
        }
        let len = rest.chars().take_while(|&c| c == ch).count();
        if len < 3 {
            return None;
        }
        let info = rest.get(len..)?;
        Some(FenceLike {
            indent,
            indent_bytes,
            spaces,
            ch,
            len,
            info,
        })
    }

    /// Can open a block (CommonMark): indented ≤ 3, no backtick in a backtick fence's info.
    fn can_open(&self) -> bool {
        self.indent <= 3 && !(self.ch == '`' && self.info.contains('`'))
    }

    /// Closes a block opened with `open_len` × `ch` (CommonMark).
    fn closes(&self, ch: char, open_len: usize) -> bool {
        self.ch == ch && self.len >= open_len && self.indent <= 3 && self.is_bare()
    }

    fn is_bare(&self) -> bool {
        self.info.chars().all(|c| c == ' ' || c == '\t')
    }

    fn fence_text(&self) -> String {
        std::iter::repeat_n(self.ch, self.len).collect()
    }

    /// The first word of the info string (the language), if any.
    fn language(&self) -> Option<&str> {
        self.info.split_whitespace().next()
    }
}

/// A fenced block that was opened and closed.
#[derive(Debug)]
struct Block<'a> {
    /// Index of the opening fence line.
    open_line: usize,
    /// Index of the closing fence line (content is strictly between).
    close_line: usize,
    /// Position of the opening fence's first fence character.
    pos: Pos,
    fence: FenceLike<'a>,
}

#[derive(Debug, Default)]
struct Scan<'a> {
    blocks: Vec<Block<'a>>,
    problems: Vec<Rejection>,
    /// First line that looks like a fence but cannot open one (indented 4+, in a quote).
    unrecognized: Option<Pos>,
}

fn scan_blocks<'a>(lines: &[Line<'a>]) -> Scan<'a> {
    let mut scan = Scan::default();
    let mut i = 0;
    while let Some(line) = lines.get(i) {
        let opening = FenceLike::parse(line.body).filter(FenceLike::can_open);
        let Some(open) = opening else {
            if scan.unrecognized.is_none() && looks_like_hidden_fence(line.body) {
                scan.unrecognized = Some(line.pos(i, leading_ws_bytes(line.body)));
            }
            i += 1;
            continue;
        };
        let pos = line.pos(i, open.indent_bytes);
        match scan_content(lines, i, &open, &mut scan.problems) {
            Some(close_line) => {
                scan.blocks.push(Block {
                    open_line: i,
                    close_line,
                    pos,
                    fence: open,
                });
                i = close_line + 1;
            }
            None => {
                let fence = open.fence_text();
                scan.problems.push(pos.reject(
                    Category::Truncated,
                    format!(
                        "the code block opened here with {fence} is never closed: the answer ended inside it; \
                         send the complete block and end it with a line containing only {fence}"
                    ),
                ));
                break;
            }
        }
    }
    scan
}

/// Scans the lines after an opening fence; returns the closing line's index,
/// or `None` if the answer ends inside the block. Records ambiguous lines.
fn scan_content(
    lines: &[Line<'_>],
    open_index: usize,
    open: &FenceLike<'_>,
    problems: &mut Vec<Rejection>,
) -> Option<usize> {
    let outer = open.fence_text();
    let longer: String = std::iter::repeat_n(open.ch, open.len + 1).collect();
    let other = if open.ch == '`' { "~~~" } else { "```" };
    let remedy = format!(
        "open and close the outer block with {longer} (longer than any fence inside) or with {other}"
    );
    let open_line_no = open_index + 1;
    // Nested blocks made of shorter fences: (length, position of the nested opening fence).
    let mut nested: Vec<(usize, Pos)> = Vec::new();
    let mut j = open_index + 1;
    while let Some(line) = lines.get(j) {
        let Some(f) = FenceLike::parse(line.body).filter(|f| f.ch == open.ch) else {
            j += 1;
            continue;
        };
        let pos = line.pos(j, f.indent_bytes);
        if f.closes(open.ch, open.len) {
            if let Some(&(inner_len, nested_pos)) = nested.first() {
                let inner: String = std::iter::repeat_n(open.ch, inner_len).collect();
                problems.push(nested_pos.reject(
                    Category::Ambiguous,
                    format!(
                        "this {inner} inside the block opened at line {open_line_no} is never closed before the \
                         block ends: if it was meant to end the block, make it {outer}; if it opens a nested \
                         block, close that with a line containing only {inner}"
                    ),
                ));
            }
            return Some(j);
        }
        if f.len >= open.len {
            let why = if f.indent > 3 {
                "is indented 4 or more columns"
            } else {
                "has text after it"
            };
            problems.push(pos.reject(
                Category::Ambiguous,
                format!(
                    "nested fence: this line inside the block opened at line {open_line_no} starts with {outer} but \
                     {why}, so it does not close the block and a nested block would end the outer one early; {remedy}"
                ),
            ));
        } else if f.can_open() {
            let top = nested.last().map_or(open.len, |&(len, _)| len);
            if f.len >= top && f.is_bare() {
                nested.pop();
            } else if f.len >= top {
                problems.push(pos.reject(
                    Category::Ambiguous,
                    format!(
                        "nested fence: this fence with text after it is inside a nested block that it cannot \
                         close; {remedy}"
                    ),
                ));
            } else {
                nested.push((f.len, pos));
            }
        }
        j += 1;
    }
    None
}

/// A fence that cannot open a block because of what precedes it: indented 4+
/// columns, or behind block-quote markers.
fn looks_like_hidden_fence(body: &str) -> bool {
    let rest = body.trim_start_matches([' ', '\t', '>']);
    rest.len() < body.len() && (rest.starts_with("```") || rest.starts_with("~~~"))
}

fn leading_ws_bytes(body: &str) -> usize {
    body.len() - body.trim_start_matches([' ', '\t', '>']).len()
}

/// The block's content: lines between the fences, opening indentation (spaces) removed, then trimmed.
fn content(lines: &[Line<'_>], block: &Block<'_>) -> String {
    let mut out = String::new();
    for line in lines
        .get(block.open_line + 1..block.close_line)
        .unwrap_or_default()
    {
        let strip = line
            .raw
            .bytes()
            .take(block.fence.spaces)
            .take_while(|&b| b == b' ')
            .count();
        out.push_str(line.raw.get(strip..).unwrap_or(line.raw));
    }
    out.trim().to_string()
}

fn list_lines(blocks: &[&Block<'_>]) -> String {
    const SHOWN: usize = 10;
    let numbers: Vec<String> = blocks
        .iter()
        .take(SHOWN)
        .map(|b| b.pos.line.to_string())
        .collect();
    let noun = if blocks.len() == 1 { "line" } else { "lines" };
    let more = if blocks.len() > SHOWN { ", ..." } else { "" };
    format!("{noun} {}{more}", numbers.join(", "))
}

fn select(
    blank: bool,
    lines: &[Line<'_>],
    scan: &Scan<'_>,
    language: Option<&str>,
) -> Result<String, Vec<Rejection>> {
    let wanted = language.map(canonical_language);
    let (candidates, others): (Vec<&Block<'_>>, Vec<&Block<'_>>) =
        scan.blocks
            .iter()
            .partition(|b| match (&wanted, b.fence.language()) {
                (None, _) | (Some(_), None) => true,
                (Some(w), Some(word)) => canonical_language(word) == *w,
            });
    let tag = language.unwrap_or("").trim();
    let opening = format!("```{tag}");
    let mut filled: Vec<(&Block<'_>, String)> = Vec::new();
    for block in &candidates {
        let value = content(lines, block);
        if !value.is_empty() {
            filled.push((block, value));
        }
    }
    match filled.as_slice() {
        [(_, value)] => Ok(value.clone()),
        [_, (second, _), ..] => {
            let all: Vec<&Block<'_>> = filled.iter().map(|(b, _)| *b).collect();
            let (which, others_rule) = match &wanted {
                Some(w) => (
                    format!("{w} or untagged"),
                    format!("no other untagged or {w} block"),
                ),
                None => ("non-empty".to_string(), "no other code block".to_string()),
            };
            Err(vec![second.pos.reject(
                Category::Ambiguous,
                format!(
                    "{} {which} code blocks (at {}) where exactly one is allowed; send exactly one block \
                     opened with {opening}, and {others_rule}",
                    all.len(),
                    list_lines(&all)
                ),
            )])
        }
        [] => Err(vec![nothing_found(
            blank,
            scan,
            &candidates,
            &others,
            &opening,
        )]),
    }
}

fn nothing_found(
    blank: bool,
    scan: &Scan<'_>,
    candidates: &[&Block<'_>],
    others: &[&Block<'_>],
    opening: &str,
) -> Rejection {
    let how =
        format!("put the code in exactly one block: a line {opening}, the code, then a line ```");
    if let Some(first) = candidates.first() {
        return first
            .pos
            .reject(Category::Empty, format!("the code block is empty; {how}"));
    }
    if let Some(first) = others.first() {
        let mut names: Vec<&str> = Vec::new();
        for name in others.iter().filter_map(|b| b.fence.language()) {
            if !names.contains(&name) && names.len() < 10 {
                names.push(name);
            }
        }
        return first.pos.reject(
            Category::NotFound,
            format!(
                "no code block in the expected language; found only block(s) tagged {} (at {}); {how}",
                names.join(", "),
                list_lines(others)
            ),
        );
    }
    if let Some(pos) = scan.unrecognized {
        return pos.reject(
            Category::NotFound,
            format!(
                "no fenced code block: this fence is indented 4+ columns or inside a quote, so it is not one; \
                 start the fence lines at the beginning of the line and {how}"
            ),
        );
    }
    if blank {
        return Rejection::whole(Category::NotFound, format!("the answer is empty; {how}"));
    }
    Rejection::whole(
        Category::NotFound,
        format!("no fenced code block found; {how}"),
    )
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    fn category(answer: &str, language: Option<&str>) -> Category {
        parse_code(answer, language).unwrap_err()[0].category
    }

    #[test]
    fn accepts_simple_block() {
        assert_eq!(
            parse_code("Here:\n```python\nprint(1)\n```\n", Some("py")).unwrap(),
            "print(1)"
        );
    }

    #[test]
    fn aliases() {
        assert_eq!(canonical_language("Python3"), "python");
        assert_eq!(canonical_language("yml"), "yaml");
        assert_eq!(canonical_language("C++"), "cpp");
        assert_eq!(canonical_language("sh"), "sh");
        assert_eq!(canonical_language("bash"), "bash");
        assert_eq!(canonical_language("brainfuck"), "brainfuck");
    }

    #[test]
    fn truncated_and_nested() {
        assert_eq!(category("```\nabc\n", None), Category::Truncated);
        assert_eq!(
            category("```py\na\n```bash\nb\n```\n", None),
            Category::Ambiguous
        );
        assert_eq!(
            parse_code("````md\n```sh\nls\n```\n````", None).unwrap(),
            "```sh\nls\n```"
        );
        assert_eq!(
            category("````md\n```sh\nls\n````", None),
            Category::Ambiguous
        );
    }

    #[test]
    fn odd_inputs_are_refused_with_the_right_category() {
        use plangate_model::Category::{Empty, NotFound, Truncated};
        for (s, want, line) in [
            ("", NotFound, 0),
            ("\u{feff}", NotFound, 0),
            ("```", Truncated, 1),
            ("~~~\r", Truncated, 1),
            ("\r\n```\r\n\r\n```\r", Empty, 2),
            // A backtick in a backtick fence's info string: not a fence.
            ("   ```é`", NotFound, 1),
            ("\t```\n```", Truncated, 2),
            ("é```\n", NotFound, 0),
        ] {
            for lang in [Some("x"), None] {
                let r = parse_code(s, lang).expect_err(s);
                assert_eq!(
                    (r[0].category, r[0].line),
                    (want, line),
                    "{s:?} {lang:?}: {r:?}"
                );
                assert!(
                    r[0].message.contains("```") || r[0].message.contains("~~~"),
                    "{r:?}"
                );
            }
        }
    }

    #[test]
    fn large_answers_stay_linear() {
        // 40k blocks: several candidates; a quadratic position scan would take minutes.
        let many = "```\nx\n```\n".repeat(40_000);
        let r = parse_code(&many, None).unwrap_err();
        assert_eq!(
            (r[0].category, r[0].line, r.len()),
            (Category::Ambiguous, 4, 1)
        );
        assert!(r[0].message.len() < 400, "{}", r[0].message);
        // 40k ambiguous lines in one block: capped.
        let nested = format!("```\n{}```\n", "```x\n".repeat(40_000));
        let r = parse_code(&nested, None).unwrap_err();
        assert_eq!(
            (r[0].category, r[0].line, r.len()),
            (Category::Ambiguous, 2, MAX_PROBLEMS)
        );
    }

    #[test]
    fn positions_agree_with_line_col() {
        let answer = "é 日本\r\n  \t x\n  ```py\r\nx\n";
        let r = parse_code(answer, None).unwrap_err();
        let offset = answer.find("```").unwrap();
        assert_eq!((r[0].line, r[0].column), crate::line_col(answer, offset));
    }

    /// Tiny deterministic generator: random answers built from fence-ish pieces.
    /// Property: never panics, and accepted content round-trips through a fresh fence.
    #[test]
    fn generated_answers_round_trip() {
        let pieces = [
            "```",
            "````",
            "~~~",
            "```python",
            "~~~ bash",
            "   ```",
            "    ```",
            "\t```",
            "code",
            "  x = 1",
            "",
            " ",
            "`inline`",
            "```a`b",
            "> ```",
            "\r",
            "é",
            "~~~~",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut accepted = 0;
        for _ in 0..30_000 {
            let mut answer = String::new();
            let n = next() % 10;
            for _ in 0..n {
                let r = next();
                answer.push_str(pieces[(r % pieces.len() as u64) as usize]);
                answer.push(if r >> 60 == 0 { ' ' } else { '\n' });
            }
            if let Ok(c) = parse_code(&answer, None) {
                accepted += 1;
                assert!(!c.is_empty() && c.trim() == c);
                assert!(round_trips(&c), "answer {answer:?} value {c:?}");
            }
        }
        assert!(accepted > 1_000, "generator too weak: {accepted} accepted");
    }

    /// Same property as the fuzz target: wrapped in a fence longer than any run of its
    /// character, `c` parses back to itself; a rejection is allowed only if `c` has a
    /// fence-like line of that character (a stray nested fence, refused on purpose).
    fn round_trips(c: &str) -> bool {
        for ch in ['`', '~'] {
            let longest = c.split(|x| x != ch).map(str::len).max().unwrap_or(0);
            let fence: String = std::iter::repeat_n(ch, longest.max(2) + 1).collect();
            match parse_code(&format!("{fence}\n{c}\n{fence}"), None) {
                Ok(back) => return back == c,
                Err(_)
                    if c.lines()
                        .any(|l| FenceLike::parse(l).is_some_and(|f| f.ch == ch)) => {}
                Err(_) => return false,
            }
        }
        true
    }
}
