//! Untrusted text (pull request, issue and merge request titles, bodies and
//! comments) made fit for a prompt, and the rule that decides whose text is
//! passed at all. Pure: no I/O, no environment.
//!
//! [`sanitize`] removes what a reader cannot see but a model reads
//! (zero-width and bidirectional controls, Unicode tag characters, variation
//! selectors, the soft hyphen, other format characters), C0 and C1 control
//! characters but `\n` and `\t` (`\r\n` becomes `\n`), and HTML comments
//! (an unterminated one to the end of the text); it neutralises @-mentions by
//! replacing `@` with the full-width `＠` (U+FF20: visible, and no mention on
//! GitHub or GitLab); it caps the size in bytes at a character boundary with
//! a marker. It reports what it did, by kind.
//!
//! [`Minimum`] and [`Association`]: GitHub's `author_association` ranked
//! owner > member > collaborator > contributor > anything else; GitLab's
//! access levels. An author whose rank cannot be read is below every minimum
//! but `none`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What [`sanitize`] removed or changed, by kind (only kinds that occurred).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removed {
    /// Counts by kind: `invisible`, `bidi`, `tag`, `variation_selector`,
    /// `control`, `html_comment` (comments), `mention` (neutralised), `cut_bytes`.
    #[serde(flatten)]
    pub counts: BTreeMap<String, u64>,
}

impl Removed {
    fn add(&mut self, kind: &str, n: u64) {
        if n > 0 {
            *self.counts.entry(kind.to_owned()).or_default() += n;
        }
    }

    /// Whether nothing was changed.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// The marker put where the text was cut.
pub const CUT_MARKER: &str = "\n[... untrusted text cut by plangate ...]";

/// The full-width commercial at that replaces `@` in a mention.
pub const MENTION_AT: char = '\u{FF20}';

/// The kind of a character [`sanitize`] drops, if it drops it.
fn dropped(c: char) -> Option<&'static str> {
    let u = c as u32;
    match u {
        // Bidirectional embeddings, overrides, isolates and marks.
        0x202A..=0x202E | 0x2066..=0x2069 | 0x200E | 0x200F | 0x061C => Some("bidi"),
        // Zero-width and invisible format characters, word joiner, invisible
        // operators, BOM, soft hyphen, Mongolian vowel separator, Hangul fillers,
        // combining grapheme joiner, interlinear annotations.
        0x200B..=0x200D
        | 0x2060..=0x2064
        | 0x206A..=0x206F
        | 0xFEFF
        | 0x00AD
        | 0x180E
        | 0x034F
        | 0x115F
        | 0x1160
        | 0x3164
        | 0xFFA0
        | 0xFFF9..=0xFFFB
        | 0x17B4
        | 0x17B5 => Some("invisible"),
        0xE0000..=0xE007F => Some("tag"),
        0xFE00..=0xFE0F | 0xE0100..=0xE01EF | 0x180B..=0x180D | 0x180F => {
            Some("variation_selector")
        }
        // Private use planes 15 and 16 (also used to smuggle text).
        0xF0000..=0x10FFFF => Some("invisible"),
        _ if c != '\n' && c != '\t' && (u < 0x20 || u == 0x7F || (0x80..=0x9F).contains(&u)) => {
            Some("control")
        }
        _ => None,
    }
}

/// `text` fit for a prompt, at most `cap` bytes, and what was done to it.
pub fn sanitize(text: &str, cap: usize) -> (String, Removed) {
    let mut removed = Removed::default();
    // 1. Characters: line ends first (`\r\n` and lone `\r` become `\n`).
    let mut chars = String::with_capacity(text.len());
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\r' {
            if it.peek() != Some(&'\n') {
                chars.push('\n');
            }
            continue;
        }
        match dropped(c) {
            Some(kind) => removed.add(kind, 1),
            None => chars.push(c),
        }
    }
    // 2. HTML comments (after the invisible characters, which could split
    // `<!--`), again until none is left (removing one can join another).
    let mut out = chars;
    let mut comments = 0;
    while out.contains("<!--") {
        out = strip_comments(&out, &mut comments);
    }
    removed.add("html_comment", comments);
    // 3. Mentions: `@name` at a word start (`a@b.c` is an address, left alone).
    let (out, mentions) = neutralise_mentions(&out);
    removed.add("mention", mentions);
    // 4. The cap, at a character boundary, with the marker inside it.
    if out.len() > cap {
        let room = cap.saturating_sub(CUT_MARKER.len());
        let mut end = room.min(out.len());
        while end > 0 && !out.is_char_boundary(end) {
            end -= 1;
        }
        removed.add("cut_bytes", (out.len() - end) as u64);
        let mut cut = out[..end].to_owned();
        if CUT_MARKER.len() <= cap {
            cut.push_str(CUT_MARKER);
        }
        return (cut, removed);
    }
    (out, removed)
}

/// One pass: every `<!-- ... -->` removed, an unterminated one to the end.
fn strip_comments(text: &str, comments: &mut u64) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("<!--") {
        out.push_str(&rest[..i]);
        *comments += 1;
        let after = &rest[i + 4..];
        // `<!-->` and `<!--->` close at once (HTML's parsing rules).
        let body_end = if after.starts_with('>') {
            Some(1)
        } else if after.starts_with("->") {
            Some(2)
        } else {
            after.find("-->").map(|j| j + 3)
        };
        match body_end {
            Some(j) => rest = &after[j..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

fn neutralise_mentions(text: &str) -> (String, u64) {
    let mut out = String::with_capacity(text.len());
    let mut n = 0;
    let mut prev: Option<char> = None;
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        let word_before =
            prev.is_some_and(|p| p.is_alphanumeric() || matches!(p, '_' | '.' | '-' | '`'));
        let name_after = it
            .peek()
            .is_some_and(|d| d.is_ascii_alphanumeric() || *d == '_');
        if c == '@' && !word_before && name_after {
            out.push(MENTION_AT);
            n += 1;
        } else {
            out.push(c);
        }
        prev = Some(c);
    }
    (out, n)
}

/// A minimum author association on GitHub (`authors.github`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum GithubMinimum {
    /// Anyone, whatever the association (or none known).
    None,
    /// Has had a commit merged (`CONTRIBUTOR`) or more.
    Contributor,
    /// Invited to the repository (`COLLABORATOR`) or more.
    Collaborator,
    /// A member of the owning organisation (`MEMBER`) or the owner.
    Member,
    /// The repository's owner (`OWNER`) only.
    Owner,
}

/// A minimum access level on GitLab (`authors.gitlab`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum GitlabMinimum {
    /// Anyone (or no level known).
    None,
    /// Guest (10) or more.
    Guest,
    /// Reporter (20) or more.
    Reporter,
    /// Developer (30) or more.
    Developer,
    /// Maintainer (40) or more.
    Maintainer,
    /// Owner (50).
    Owner,
}

/// `authors:` of an input taken from the CI event: whose text is passed at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Minimum {
    /// GitHub's minimum `author_association`. Default `collaborator`.
    #[serde(default = "default_github")]
    pub github: GithubMinimum,
    /// GitLab's minimum access level. Default `developer`.
    #[serde(default = "default_gitlab")]
    pub gitlab: GitlabMinimum,
}

fn default_github() -> GithubMinimum {
    GithubMinimum::Collaborator
}

fn default_gitlab() -> GitlabMinimum {
    GitlabMinimum::Developer
}

impl Default for Minimum {
    fn default() -> Minimum {
        Minimum {
            github: default_github(),
            gitlab: default_gitlab(),
        }
    }
}

/// What is known of a text's author.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Association {
    /// GitHub's `author_association` as the payload spells it (`OWNER`, ...).
    Github(String),
    /// A GitLab access level (10, 20, 30, 40, 50).
    Gitlab(u32),
    /// Nothing: the payload did not say.
    Unknown,
}

impl Association {
    /// Whether the author passes `min`; `None` when they pass, else why not.
    pub fn check(&self, min: Minimum) -> Result<(), String> {
        match self {
            Association::Github(a) => {
                let rank = match a.to_ascii_uppercase().as_str() {
                    "OWNER" => Some(GithubMinimum::Owner),
                    "MEMBER" => Some(GithubMinimum::Member),
                    "COLLABORATOR" => Some(GithubMinimum::Collaborator),
                    "CONTRIBUTOR" => Some(GithubMinimum::Contributor),
                    _ => None,
                };
                if min.github == GithubMinimum::None || rank.is_some_and(|r| r >= min.github) {
                    Ok(())
                } else {
                    Err(format!(
                        "its author's association `{a}` is below the minimum `{}`",
                        gh_name(min.github)
                    ))
                }
            }
            Association::Gitlab(level) => {
                let need = match min.gitlab {
                    GitlabMinimum::None => 0,
                    GitlabMinimum::Guest => 10,
                    GitlabMinimum::Reporter => 20,
                    GitlabMinimum::Developer => 30,
                    GitlabMinimum::Maintainer => 40,
                    GitlabMinimum::Owner => 50,
                };
                if *level >= need {
                    Ok(())
                } else {
                    Err(format!(
                        "its author's access level {level} is below the minimum {need}"
                    ))
                }
            }
            Association::Unknown => Err(
                "its author's association cannot be determined (withheld unless `authors` is `none`)"
                    .to_owned(),
            ),
        }
    }
}

fn gh_name(m: GithubMinimum) -> &'static str {
    match m {
        GithubMinimum::None => "none",
        GithubMinimum::Contributor => "contributor",
        GithubMinimum::Collaborator => "collaborator",
        GithubMinimum::Member => "member",
        GithubMinimum::Owner => "owner",
    }
}

#[cfg(test)]
mod tests;
