//! What the run changed in the workspace: the report's `diff` block,
//! `diff-summary.md`, and which step changed which file.
//!
//! A [`Tracker`] records the workspace before the first step and compares it
//! with the workspace after the last step (and the rollbacks), one of two ways:
//!
//! - **git** (`git.rs`) when the workspace is inside a git work tree: the
//!   before and after states are written as git trees into a private index
//!   and object directory in a temporary folder (the user's index, objects,
//!   refs and config are never written), and `git diff-tree` compares them.
//!   Ignored files stay out exactly as git sees them. Hooks, fsmonitor,
//!   external diff drivers, textconv and clean/smudge filters are off.
//! - **snapshot** (`snapshot.rs`) elsewhere, or when git cannot be used (the
//!   reason is kept as a note): a content hash of every file (`.gitignore`
//!   respected), text kept for small files, `similar` line diffs; renames are
//!   found only when the content is identical.
//!
//! Special files (`traps.rs`): a FIFO, socket or device where git or the
//! walker opens a file by name (`.gitignore`, `.gitattributes`, a nested
//! `.git/HEAD`...) is removed before every walk and git command, said, and
//! makes the diff an error ([`Tracker::errors`]); the walker never enters a
//! folder where a read would block. What `git add` cannot take (`.Git`, a
//! nested repository) is left out of it and listed by `ignored.rs`; a git
//! that fails at the end lists every changed file from that record.
//!
//! Per-step attribution (`stat.rs`): a cheap metadata walk (size, mtime,
//! ctime, inode) at the start and at each [`Tracker::checkpoint`]. The engine
//! calls it when the workspace is quiet: after a step that ran alone (the
//! files whose metadata changed are that step's), or with no label after an
//! interval where steps overlapped (the baseline moves on, nobody is named).
//!
//! Paths are relative to the workspace, `/`-separated, and text: a name that
//! is valid UTF-8 is shown as it is; otherwise each byte of an invalid
//! sequence is written `\xNN` (two upper-case hex digits) and the valid parts
//! are kept ([`escape_bytes`]). The rule is the same in both methods and in
//! the attribution, so the same file always has the same name.

mod git;
mod ignored;
mod snapshot;
mod stat;
mod traps;

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::model::{Change, DiffSummary, FileChange, Method};

use crate::markdown;

/// The commit `HEAD` names in the git work tree holding `workspace`, if it
/// is in one (recorded in the report; `--resume` compares it).
pub(crate) fn workspace_head(workspace: &Path) -> Option<String> {
    git::head(workspace)
}

/// A read-only git command's whole output, run with the diff's safe
/// settings (no hooks, filters, fsmonitor, transport, system configuration):
/// what `tools::git_store` lists a repository's paths with.
pub(crate) fn git_read(cwd: &Path, args: &[&std::ffi::OsStr]) -> Result<Vec<u8>, String> {
    git::read_only(cwd, args)
}

/// The run is stopping (SIGINT/SIGTERM): every git command of the diff
/// running now is ended with its process group, and the later ones get a
/// short time at most (the diff then says it is not complete).
pub(crate) fn stop() {
    git::stop();
}

/// Largest file whose text is kept for a line diff (snapshot method).
pub(crate) const KEEP_FILE: u64 = 1024 * 1024;

/// Past this size a file is never read whole to be compared (git records a
/// stand-in for it, the snapshot method its size and times).
const COSTLY: u64 = 256 * 1024 * 1024;

/// Whether comparing the file by content would read far more than the step
/// wrote: one over [`COSTLY`], or a sparse one (over 1 MiB, under half of it
/// allocated: `truncate -s 1T` writes nothing).
fn costly(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    m.is_file()
        && (m.size() > COSTLY
            || (m.size() > 1024 * 1024 && m.blocks().saturating_mul(512) < m.size() / 2))
}
/// Most lines of unified diff shown per file in the summary.
pub(crate) const SHOW_LINES: usize = 400;
/// Most bytes of unified diffs in the summary.
pub(crate) const SHOW_TOTAL: usize = 512 * 1024;
/// Longest diff line shown (longer lines are cut with `…`).
pub(crate) const SHOW_LINE_BYTES: usize = 1000;
/// Above this many files in the workspace, steps are not attributed their changes.
pub(crate) const ATTRIBUTION_MAX_FILES: usize = 50_000;
/// Most changed files listed on one step.
pub(crate) const STEP_FILES_MAX: usize = 1000;

/// The files a step changed (by metadata), for the report's step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepFiles {
    /// Sorted, at most [`STEP_FILES_MAX`].
    pub files: Vec<String>,
    /// How many more were left out.
    pub omitted: u64,
}

/// What the summary shows under a file's heading.
#[derive(Debug, Clone, PartialEq)]
enum Body {
    /// Unified diff lines (at most [`SHOW_LINES`]), how many more there were,
    /// and whether the rest could not be read.
    Text {
        lines: Vec<String>,
        more: usize,
        cut: bool,
    },
    /// Not text.
    Binary,
    /// Compared by hash only.
    TooLarge,
    /// Nothing to show (renamed without changes, empty file, mode change).
    Nothing,
    /// Not shown, and why.
    NotShown(&'static str),
}

/// A comparison before the totals, attribution and rendering.
#[derive(Debug, Default)]
struct Compared {
    files: Vec<(FileChange, Body)>,
    notes: Vec<String>,
}

enum Base {
    Git(Box<git::Session>, String),
    Snapshot(snapshot::Snapshot),
    Done,
}

/// Options for [`Tracker::start_with`] (tests use them to break git on purpose).
#[derive(Debug, Clone)]
pub struct Options {
    /// The git program (default [`crate::environ::git`]: found on `PATH` before any step ran).
    pub git: OsString,
    /// Snapshot method: most bytes read before the run (default [`snapshot::READ_BUDGET`]).
    pub read_budget: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            git: crate::environ::git().into_os_string(),
            read_budget: snapshot::READ_BUDGET,
        }
    }
}

/// The workspace before the run, and who changed what since.
pub struct Tracker {
    base: Base,
    walk: stat::Walk,
    /// The last metadata walk; None when attribution is off.
    stat: Option<stat::StatMap>,
    /// Path → labels of the checkpoints that saw it change, in order.
    attribution: HashMap<String, Vec<String>>,
    notes: Vec<String>,
    /// Whether a path's content must not be shown (the permission rules deny reading it).
    withheld: Option<Withhold>,
    /// Every file before the run, for what the comparison does not see (ignored files).
    ignored: Option<ignored::Ignored>,
    /// Whether git's global excludes count (the git method).
    git_global: bool,
    /// The workspace's folder inside its repository, as git said before the
    /// first step (the git method): a step's `.git` cannot move it.
    prefix: Option<String>,
    /// Why the diff is not whole (special files removed or not walked, git
    /// failing): each is an error of the run, never a quiet "no change".
    errors: Vec<String>,
}

/// Says whether a changed file's content must be withheld from the diff.
pub(crate) type Withhold = Box<dyn Fn(&str) -> bool + Send>;

impl Tracker {
    /// Record the workspace as it is now. `out_dir` (the run's output folder)
    /// is left out when it lies inside the workspace. Never fails: problems
    /// become notes.
    pub fn start(workspace: &Path, out_dir: &Path) -> Tracker {
        Tracker::start_with(workspace, out_dir, &Options::default())
    }

    /// [`Tracker::start`] with options.
    pub fn start_with(workspace: &Path, out_dir: &Path, options: &Options) -> Tracker {
        let exclude = vec![out_dir.to_path_buf()];
        let mut notes = Vec::new();
        let mut errors = Vec::new();
        // Before git or the walker opens anything by name.
        defuse(workspace, &exclude, &mut notes, &mut errors);
        let mut git_mode = false;
        let mut prefix = None;
        let base = match git::Session::open(workspace, &exclude, &options.git) {
            Ok(Some(session)) => match session.record() {
                Ok(tree) => {
                    git_mode = true;
                    prefix = Some(session.prefix.clone());
                    Base::Git(Box::new(session), tree)
                }
                Err(e) => {
                    notes.push(format!(
                        "git could not record the workspace ({e}); compared by content snapshot instead"
                    ));
                    Base::Snapshot(snapshot::Snapshot::take(
                        workspace,
                        &exclude,
                        options.read_budget,
                    ))
                }
            },
            Ok(None) => Base::Snapshot(snapshot::Snapshot::take(
                workspace,
                &exclude,
                options.read_budget,
            )),
            Err(e) => {
                notes.push(format!(
                    "git could not be used ({e}); compared by content snapshot instead"
                ));
                Base::Snapshot(snapshot::Snapshot::take(
                    workspace,
                    &exclude,
                    options.read_budget,
                ))
            }
        };
        let ignored = Some(ignored::Ignored::take(workspace, &exclude, git_mode));
        let walk = stat::Walk::new(workspace, exclude, git_mode);
        let stat = walk.take(ATTRIBUTION_MAX_FILES);
        if stat.is_none() {
            notes.push(format!(
                "per-step attribution skipped: the workspace has more than {ATTRIBUTION_MAX_FILES} files"
            ));
        }
        Tracker {
            base,
            walk,
            stat,
            attribution: HashMap::new(),
            notes,
            withheld: None,
            ignored,
            git_global: git_mode,
            prefix,
            errors,
        }
        .trapped()
    }

    /// Note the files the walks did not open (they would block).
    fn trapped(mut self) -> Tracker {
        self.note_trapped();
        self
    }

    fn note_trapped(&mut self) {
        for t in stat::take_trapped() {
            let what = crate::regular::blocking(&t).unwrap_or("a special file");
            let why = format!(
                "`{}` is {what} where the ignore rules are read: its folder was not compared",
                relative(self.walk.root(), &t)
                    .map_or_else(|| t.display().to_string(), |r| path_text(&r))
            );
            self.notes.push(why.clone());
            self.errors.push(why);
        }
    }

    /// Why the diff is not whole; empty when it is (read after [`Tracker::finish`]).
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// Which comparison this tracker makes.
    pub fn method(&self) -> Method {
        match self.base {
            Base::Git(..) => Method::Git,
            Base::Snapshot(_) | Base::Done => Method::Snapshot,
        }
    }

    /// The workspace is quiet: note what changed since the last checkpoint
    /// and credit it to `label` (a step id, or `<id> (rollback)`); with no
    /// label only move the baseline. Returns the labelled step's files, or
    /// None when attribution is off.
    pub fn checkpoint(&mut self, label: Option<&str>) -> Option<StepFiles> {
        let root = self.walk.root().to_path_buf();
        let exclude = self.walk.exclude().to_vec();
        defuse(&root, &exclude, &mut self.notes, &mut self.errors);
        let old = self.stat.take()?;
        let new = self.walk.take(ATTRIBUTION_MAX_FILES);
        self.note_trapped();
        let Some(new) = new else {
            self.notes.push(format!(
                "per-step attribution stopped: the workspace grew past {ATTRIBUTION_MAX_FILES} files"
            ));
            return None;
        };
        let changed = self.walk.changed(&old, &new);
        self.stat = Some(new);
        let label = label?;
        for path in &changed {
            let labels = self.attribution.entry(path.clone()).or_default();
            if labels.last().map(String::as_str) != Some(label) {
                labels.push(label.to_owned());
            }
        }
        let omitted = changed.len().saturating_sub(STEP_FILES_MAX) as u64;
        let mut files = changed;
        files.truncate(STEP_FILES_MAX);
        Some(StepFiles { files, omitted })
    }

    /// Never show the content of a path `withhold` names (its row stays, its
    /// diff is replaced by a note): the permission rules deny reading it.
    pub(crate) fn withhold(&mut self, withhold: Withhold) {
        self.withheld = Some(withhold);
    }

    /// Credit `files` to `label` whatever ran beside it (an agent step's
    /// change set is exact).
    pub fn credit(&mut self, label: &str, files: &[String]) {
        for path in files {
            let labels = self.attribution.entry(path.clone()).or_default();
            if labels.last().map(String::as_str) != Some(label) {
                labels.push(label.to_owned());
            }
        }
    }

    /// Compare the workspace now with the start: the `diff` block and
    /// `diff-summary.md`. Call once, after the last step and rollback.
    pub fn finish(&mut self) -> (DiffSummary, String) {
        let method = self.method();
        let root = self.walk.root().to_path_buf();
        let exclude = self.walk.exclude().to_vec();
        defuse(&root, &exclude, &mut self.notes, &mut self.errors);
        // git could not say: every file whose metadata changed is listed
        // from the record of all files, and the diff is an error.
        let mut git_failed = false;
        let mut compared = match std::mem::replace(&mut self.base, Base::Done) {
            Base::Git(session, before) => {
                match session
                    .record()
                    .and_then(|after| session.compare(&before, &after))
                {
                    Ok(c) => c,
                    Err(e) => {
                        git_failed = true;
                        let why = format!(
                            "git could not compare the workspace after the run ({e}); every file added, changed or deleted is listed from the files' metadata instead, without the earlier content"
                        );
                        self.errors.push(why.clone());
                        Compared {
                            files: Vec::new(),
                            notes: vec![why],
                        }
                    }
                }
            }
            Base::Snapshot(before) => {
                let after =
                    snapshot::Snapshot::take_after(self.walk.root(), self.walk.exclude(), &before);
                before.compare(&after)
            }
            Base::Done => Compared {
                files: Vec::new(),
                notes: vec!["the diff was already computed".to_owned()],
            },
        };
        if let Some(ign) = self.ignored.take()
            && method != Method::None
        {
            // A file the comparison calls deleted that is still there: the
            // ignore rules hide it now (a step ignored it); judged again below.
            let root = self.walk.root().to_path_buf();
            let mut hidden: std::collections::HashSet<String> = compared
                .files
                .iter()
                .filter(|(f, _)| {
                    f.change == Change::Deleted && root.join(&f.path).symlink_metadata().is_ok()
                })
                .map(|(f, _)| f.path.clone())
                .collect();
            if git_failed {
                hidden.extend(ign.keys());
            }
            compared.files.retain(|(f, _)| !hidden.contains(&f.path));
            let listed: std::collections::HashSet<String> = compared
                .files
                .iter()
                .flat_map(|(f, _)| std::iter::once(f.path.clone()).chain(f.old_path.clone()))
                .collect();
            let mut extra = ign.compare(
                self.walk.root(),
                self.walk.exclude(),
                self.git_global,
                &listed,
                &hidden,
            );
            compared.files.append(&mut extra.files);
            compared.notes.append(&mut extra.notes);
        }
        compared
            .files
            .sort_by(|(a, _), (b, _)| a.path.cmp(&b.path).then(a.old_path.cmp(&b.old_path)));
        if let Some(withhold) = &self.withheld {
            for (f, body) in &mut compared.files {
                if withhold(&f.path) || f.old_path.as_deref().is_some_and(withhold) {
                    *body = Body::NotShown(
                        "content withheld: the permission rules deny reading this file",
                    );
                }
            }
        }
        for (f, _) in &mut compared.files {
            let mut steps: Vec<String> = Vec::new();
            for p in f.old_path.iter().chain(std::iter::once(&f.path)) {
                for l in self.attribution.get(p).into_iter().flatten() {
                    if !steps.contains(l) {
                        steps.push(l.clone());
                    }
                }
            }
            f.steps = steps;
        }
        self.note_trapped();
        let mut notes = std::mem::take(&mut self.notes);
        notes.append(&mut compared.notes);
        let summary = DiffSummary {
            files_changed: compared.files.len() as u64,
            insertions: compared.files.iter().map(|(f, _)| f.insertions).sum(),
            deletions: compared.files.iter().map(|(f, _)| f.deletions).sum(),
            files: compared.files.iter().map(|(f, _)| f.clone()).collect(),
            method,
            notes,
            prefix: if method == Method::Git {
                self.prefix.clone()
            } else {
                None
            },
        };
        let bodies: Vec<&Body> = compared.files.iter().map(|(_, b)| b).collect();
        let markdown = render(&summary, &bodies);
        (summary, markdown)
    }
}

/// Remove the special files git or the walker would block on
/// ([`traps::defuse`]); each is said on the console and is an error of the diff.
fn defuse(root: &Path, exclude: &[PathBuf], notes: &mut Vec<String>, errors: &mut Vec<String>) {
    let d = traps::defuse(root, exclude);
    for r in d.removed {
        let why = format!(
            "{r} was removed from the workspace: a special file where git and plangate open a file by name would block them (and the user's git)"
        );
        crate::output::warning(format_args!("{why}"));
        notes.push(why.clone());
        errors.push(why);
    }
    for s in d.stuck {
        crate::output::warning(format_args!("{s}"));
        notes.push(s.clone());
        errors.push(s);
    }
}

/// The diff when the workspace could not be recorded before the run.
pub(crate) fn read_only_run() -> (DiffSummary, String) {
    let summary = DiffSummary {
        method: Method::None,
        notes: vec![
            "every step that ran is a plangate tool that only reads the workspace (find_in_files, system_info, secrets_scan without redact, http_request, archive list) and none has a rollback_command, so the workspace was not snapshotted".into(),
        ],
        ..DiffSummary::default()
    };
    let markdown = render(&summary, &[]);
    (summary, markdown)
}

/// The diff when the workspace could not be recorded before the run.
pub(crate) fn not_recorded() -> (DiffSummary, String) {
    let summary = DiffSummary {
        notes: vec![
            "internal error: the workspace was not recorded before the run; no diff".into(),
        ],
        ..DiffSummary::default()
    };
    let markdown = render(&summary, &[]);
    (summary, markdown)
}

/// The summary of a diff that could not be made or scanned (`why`).
pub(crate) fn failed(why: String) -> (DiffSummary, String) {
    let summary = DiffSummary {
        notes: vec![why],
        ..DiffSummary::default()
    };
    let markdown = render(&summary, &[]);
    (summary, markdown)
}

/// Bytes as text: valid UTF-8 as is, each byte of an invalid sequence as `\xNN`.
pub(crate) fn escape_bytes(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        s.push_str(chunk.valid());
        for b in chunk.invalid() {
            let _ = write!(s, "\\x{b:02X}");
        }
    }
    s
}

/// A relative path as the report names it.
fn path_text(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    escape_bytes(p.as_os_str().as_bytes())
}

/// The part of `path` under `root`, if it is under it.
fn relative(root: &Path, path: &Path) -> Option<PathBuf> {
    path.strip_prefix(root).ok().map(Path::to_path_buf)
}

/// Escape what would break a Markdown table cell or code span.
/// A name as a code span in a table cell (see `crate::markdown`).
fn md_cell(s: &str) -> String {
    markdown::code(s, markdown::At::Cell)
}

/// A name as a code span in a heading.
fn md_code(s: &str) -> String {
    markdown::code(s, markdown::At::Text)
}

/// A code fence longer than any run of backticks in `lines`.
fn fence(lines: &[String]) -> String {
    let mut longest = 0;
    for l in lines {
        let mut run = 0;
        for c in l.chars() {
            run = if c == '`' { run + 1 } else { 0 };
            longest = longest.max(run);
        }
    }
    "`".repeat(longest.max(2) + 1)
}

/// Cut a line to [`SHOW_LINE_BYTES`] at a character boundary.
fn cut_line(s: &str) -> String {
    if s.len() <= SHOW_LINE_BYTES {
        // Whole: the summary is scanned for findings, then redacted where written.
        return s.to_owned();
    }
    // Redacted before it is cut: a cut secret is no longer recognised.
    let s = crate::redact::clean_str(s);
    if s.len() <= SHOW_LINE_BYTES {
        return s.into_owned();
    }
    let mut end = SHOW_LINE_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Where line `line` of `diff-summary.md` (`markdown`) comes from: the
/// workspace file (relative to the workspace) and its line after the run (a
/// removed line: where it was). `files` are the summary's, in the order it
/// shows them. None outside the diffs, and for a deleted file (nothing to
/// point at).
pub(crate) fn locate(files: &[FileChange], markdown: &str, line: u64) -> Option<(String, u64)> {
    let mut in_diffs = false;
    let mut file: Option<&FileChange> = None;
    let mut headings = files.iter();
    // The next line of the file after the run, inside a hunk.
    let mut next: Option<u64> = None;
    for (n, l) in (1u64..).zip(markdown.lines()) {
        if !in_diffs {
            in_diffs = l == "## Diffs";
        } else if l.starts_with("### ") {
            // Diff lines start with a space, `+`, `-`, `@` or `\`: never `#`.
            file = headings.next();
            next = None;
        } else if let Some(h) = l.strip_prefix("@@ ") {
            next = hunk_start(h);
        } else if let Some(at) = next {
            let here = match l.as_bytes().first() {
                Some(b'+' | b' ') => {
                    next = Some(at + 1);
                    at
                }
                Some(b'-') => at.saturating_sub(1).max(1),
                _ => at,
            };
            if n == line {
                return file
                    .filter(|f| f.change != crate::model::Change::Deleted)
                    .map(|f| (f.path.clone(), here.max(1)));
            }
            continue;
        }
        if n == line {
            return None;
        }
    }
    None
}

/// The first line of the new side of a hunk header (`-a,b +c,d @@`).
fn hunk_start(header: &str) -> Option<u64> {
    let new = header.split(' ').find_map(|w| w.strip_prefix('+'))?;
    new.split(',').next()?.parse().ok()
}

/// `diff-summary.md`: totals, notes, the table of files, then the diffs.
fn render(summary: &DiffSummary, bodies: &[&Body]) -> String {
    let mut md = String::from("# What the run changed\n\n");
    let method = match summary.method {
        Method::Git => "compared with git",
        Method::Snapshot => "compared by content snapshot",
        Method::None => "not recorded: no step that ran could write the workspace",
    };
    if summary.files.is_empty() {
        let _ = writeln!(md, "No file in the workspace changed ({method}).");
    } else {
        let _ = writeln!(
            md,
            "{} file(s) changed, {} insertion(s), {} deletion(s) ({method}).",
            summary.files_changed, summary.insertions, summary.deletions
        );
    }
    if !summary.notes.is_empty() {
        md.push('\n');
        for n in &summary.notes {
            let _ = writeln!(md, "> **Note:** {}", markdown::text(n, markdown::At::Text));
        }
    }
    if summary.files.is_empty() {
        return md;
    }
    md.push_str("\n| file | change | + | - | steps |\n| --- | --- | ---: | ---: | --- |\n");
    for f in &summary.files {
        let file = match &f.old_path {
            Some(old) => format!("{} → {}", md_cell(old), md_cell(&f.path)),
            None => md_cell(&f.path),
        };
        let _ = writeln!(
            md,
            "| {file} | {}{}{} | {} | {} | {} |",
            f.change.as_str(),
            if f.binary { " (binary)" } else { "" },
            if f.ignored { " (ignored)" } else { "" },
            f.insertions,
            f.deletions,
            markdown::text(&f.steps.join(", "), markdown::At::Cell)
        );
    }
    md.push_str("\n## Diffs\n\n");
    let mut shown = 0usize;
    for (f, body) in summary.files.iter().zip(bodies) {
        match &f.old_path {
            Some(old) => {
                let _ = writeln!(md, "### {} → {}\n", md_code(old), md_code(&f.path));
            }
            None => {
                let ignored = if f.ignored { " (ignored)" } else { "" };
                let _ = writeln!(md, "### {}{ignored}\n", md_code(&f.path));
            }
        }
        match body {
            Body::Text { lines, more, cut } => {
                if shown >= SHOW_TOTAL {
                    md.push_str("(diff not shown: the summary is full)\n\n");
                    continue;
                }
                let fence = fence(lines);
                let _ = writeln!(md, "{fence}diff");
                for l in lines {
                    md.push_str(l);
                    md.push('\n');
                    shown += l.len() + 1;
                }
                if *more > 0 {
                    let _ = writeln!(md, "... ({more} more lines not shown)");
                }
                if *cut {
                    md.push_str("... (the rest is not shown: the summary is full)\n");
                }
                let _ = writeln!(md, "{fence}\n");
            }
            Body::Binary => md.push_str("(binary file; no line diff)\n\n"),
            Body::TooLarge => {
                md.push_str("(too large to compare line by line, or past the read budget of a large workspace; compared by hash or file metadata)\n\n")
            }
            Body::Nothing => md.push_str("(no content change)\n\n"),
            Body::NotShown(why) => {
                let _ = writeln!(md, "(diff not shown: {why})\n");
            }
        }
    }
    md
}

#[cfg(test)]
mod tests;
