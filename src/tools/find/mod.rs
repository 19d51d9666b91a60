//! The `find_in_files` tool (design 002, 2.2): a regex search of workspace
//! files with ripgrep's own crates — `ignore` walks in parallel (`.gitignore`
//! respected, `.git` skipped), `grep-searcher` reads lines with context and
//! binary detection, `grep-regex` matches. Results are sorted by file and
//! line, so the same tree gives the same `result.json` on every run.

pub(crate) mod spec;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use globset::GlobSet;
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use serde::Serialize;
use serde_json::json;

use super::{StepContext, Stop, ToolReturn};
use crate::model::{Level, StepOutcome, StepStatus};
use crate::tools::params::find::FindAction;

/// Longest `match_text` / context line kept, in characters.
const MAX_LINE_CHARS: usize = 500;
/// Default context lines before and after a match.
pub(crate) const DEFAULT_CONTEXT: u32 = 2;
/// Default matches kept.
pub(crate) const DEFAULT_MAX_MATCHES: u32 = 20;

/// One match, as the design returns it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FoundMatch {
    /// Relative to the workspace, `/`-separated.
    pub file: String,
    /// 1-based.
    pub line_number: u64,
    /// 1-based byte column of the first match on the line.
    pub column: u64,
    /// The matching line (without its line terminator, cut at 500 characters).
    pub match_text: String,
    /// Lines before, oldest first.
    pub context_before: Vec<String>,
    /// Lines after.
    pub context_after: Vec<String>,
    /// How much of the line the matches cover, in (0, 1]: 1.0 is a whole-line match.
    pub match_score: f64,
}

/// The search's settings, built once and shared by the walker's threads.
struct Search {
    matcher: RegexMatcher,
    include: Option<GlobSet>,
    context: usize,
    include_binary: bool,
    max_matches: usize,
    workspace: PathBuf,
    /// Search hidden files too.
    hidden: bool,
}

/// What the threads gather.
#[derive(Default)]
struct Gathered {
    /// The `max_matches` first matches by (file, line).
    kept: Mutex<BTreeMap<(String, u64), FoundMatch>>,
    total_matches: AtomicU64,
    files_searched: AtomicU64,
    files_with_matches: AtomicU64,
    binary_skipped: AtomicU64,
    errors: Mutex<Vec<String>>,
    stopped: AtomicBool,
    /// Files and folders left out because the permission rules deny reading them.
    withheld: std::sync::Arc<AtomicU64>,
}

/// Why a search could not start.
#[derive(Debug, thiserror::Error)]
enum FindError {
    /// The path resolves outside the workspace.
    #[error("`{shown}` resolves to `{real}`, outside the workspace", shown = .0.display(), real = .1.display())]
    Outside(PathBuf, PathBuf),
    /// The path cannot be resolved.
    #[error("cannot search `{shown}`: {1}", shown = .0.display())]
    Path(PathBuf, #[source] std::io::Error),
    /// The query does not compile.
    #[error("`query` is not a valid regular expression: {0}")]
    Query(#[source] grep_regex::Error),
    /// A glob list does not compile.
    #[error("`{0}`: {1}")]
    Glob(&'static str, String),
}

/// Search.
pub(crate) fn run(a: &FindAction, ctx: &StepContext, stop: &Stop) -> ToolReturn {
    let started = Instant::now();
    let mut outcome = StepOutcome::new(std::time::SystemTime::now());
    let p = &a.params;
    let (root, search, exclude) = match prepare(a, ctx) {
        Ok(x) => x,
        Err(e) => {
            outcome.error = Some(e.to_string());
            return ToolReturn {
                outcome,
                result: None,
            };
        }
    };
    if let Err(why) = ctx.may(&ctx.env.workspace.join(&a.path), Level::Read) {
        outcome.error = Some(why);
        return ToolReturn {
            outcome,
            result: None,
        };
    }
    let gathered = walk(&root, &search, exclude, ctx, stop);
    let withheld = gathered.withheld.load(Ordering::Relaxed);
    let kept = gathered.kept.into_inner().unwrap_or_default();
    let total = gathered.total_matches.load(Ordering::Relaxed);
    let stopped = gathered.stopped.load(Ordering::Relaxed);
    let matches: Vec<FoundMatch> = kept.into_values().collect();
    let truncated = stopped || total > matches.len() as u64;
    let mut warnings: Vec<String> = gathered.errors.into_inner().unwrap_or_default();
    warnings.sort();
    warnings.truncate(100);
    if stopped {
        warnings
            .push("the search was stopped before it finished (timeout or run stopped)".to_owned());
    }
    if withheld > 0 {
        warnings.push(format!(
            "{withheld} file(s) or folder(s) withheld: the permission rules deny reading them (they were not searched)"
        ));
    }
    let result = json!({
        "matches": matches,
        "total_files_searched": gathered.files_searched.load(Ordering::Relaxed),
        "total_matches": total,
        "files_with_matches": gathered.files_with_matches.load(Ordering::Relaxed),
        "binary_files_skipped": gathered.binary_skipped.load(Ordering::Relaxed),
        "search_time": started.elapsed().as_secs_f64(),
        "truncated": truncated,
        "withheld_paths": withheld,
        "warnings": warnings,
    });
    outcome.status = StepStatus::Success;
    if p.fail_on_match && total > 0 {
        outcome.status = StepStatus::Failed;
        outcome.error = Some(format!(
            "`{}` matched {total} line(s) (fail_on_match)",
            p.query
        ));
    } else if p.fail_if_none && total == 0 && !stopped {
        outcome.status = StepStatus::Failed;
        outcome.error = Some(format!("`{}` matched nothing (fail_if_none)", p.query));
    }
    ToolReturn {
        outcome,
        result: Some(result),
    }
}

/// The resolved root, the compiled search and the directories left out.
fn prepare(
    a: &FindAction,
    ctx: &StepContext,
) -> Result<(PathBuf, Search, Option<GlobSet>), FindError> {
    let p = &a.params;
    let ws = &ctx.env.workspace;
    let root = match ws.join(&a.path).canonicalize() {
        Ok(r) if r.starts_with(ws) => r,
        Ok(r) => return Err(FindError::Outside(a.path.clone(), r)),
        Err(e) => return Err(FindError::Path(a.path.clone(), e)),
    };
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(!p.case_sensitive)
        .fixed_strings(p.fixed_strings)
        .line_terminator(Some(b'\n'))
        .build(&p.query)
        .map_err(FindError::Query)?;
    let include = globs(p.file_pattern.as_deref().unwrap_or(""))
        .map_err(|e| FindError::Glob("file_pattern", e))?;
    let exclude =
        globs(&p.exclude_dirs.join(",")).map_err(|e| FindError::Glob("exclude_dirs", e))?;
    let search = Search {
        matcher,
        include,
        context: p.max_context_lines.unwrap_or(DEFAULT_CONTEXT) as usize,
        include_binary: p.include_binary,
        max_matches: p.max_matches.unwrap_or(DEFAULT_MAX_MATCHES).max(1) as usize,
        workspace: ws.clone(),
        hidden: p.hidden,
    };
    Ok((root, search, exclude))
}

/// Walk `root` in parallel (ignore files respected, `.git`, the output
/// folder and `exclude` left out) and search every file that is included.
fn walk(
    root: &Path,
    search: &Search,
    exclude: Option<GlobSet>,
    ctx: &StepContext,
    stop: &Stop,
) -> Gathered {
    let gathered = Gathered::default();
    let mut walker = ignore::WalkBuilder::new(root);
    walker
        .hidden(!search.hidden)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .threads(
            std::thread::available_parallelism()
                .map_or(2, usize::from)
                .min(8),
        );
    let out_dir = ctx.out_dir.clone();
    let judge = ctx.judge.clone();
    let withheld = std::sync::Arc::clone(&gathered.withheld);
    walker.filter_entry(move |e| {
        let name = e.file_name();
        if name == ".git" || e.path().starts_with(&out_dir) {
            return false;
        }
        // The root is resolved and links are not followed: names are real paths.
        if let Some(j) = &judge
            && j.check_real(e.path(), Level::Read).is_err()
        {
            withheld.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let is_dir = e.file_type().is_some_and(|t| t.is_dir());
        !(is_dir
            && exclude
                .as_ref()
                .is_some_and(|x| x.is_match(name) || x.is_match(e.path())))
    });
    walker.build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(search.context)
            .after_context(search.context)
            .binary_detection(if search.include_binary {
                BinaryDetection::none()
            } else {
                BinaryDetection::quit(b'\0')
            })
            .build();
        let gathered = &gathered;
        Box::new(move |entry| {
            if stop.now() {
                gathered.stopped.store(true, Ordering::Relaxed);
                return ignore::WalkState::Quit;
            }
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    push_error(gathered, e.to_string());
                    return ignore::WalkState::Continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            if let Some(inc) = &search.include
                && !inc.is_match(entry.file_name())
                && !inc.is_match(rel(&search.workspace, entry.path()))
            {
                return ignore::WalkState::Continue;
            }
            search_file(search, gathered, &mut searcher, entry.path());
            ignore::WalkState::Continue
        })
    });
    gathered
}

/// Comma-separated globs; None when there are none.
fn globs(list: &str) -> Result<Option<GlobSet>, String> {
    crate::policy::glob::set(list.split(',').map(str::trim).filter(|g| !g.is_empty()))
}

fn rel(ws: &Path, p: &Path) -> String {
    p.strip_prefix(ws)
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

fn push_error(g: &Gathered, e: String) {
    if let Ok(mut v) = g.errors.lock()
        && v.len() < 1000
    {
        v.push(e);
    }
}

/// Search one file, adding what it finds to `gathered`.
fn search_file(search: &Search, gathered: &Gathered, searcher: &mut Searcher, path: &Path) {
    let mut sink = FileSink {
        search,
        file: rel(&search.workspace, path),
        found: Vec::new(),
        pending_before: Vec::new(),
        count: 0,
        binary: false,
    };
    gathered.files_searched.fetch_add(1, Ordering::Relaxed);
    // Opened as a regular file only: one swapped for a FIFO since the walk
    // listed it is refused, never waited on.
    let searched = crate::regular::open(path)
        .and_then(|f| searcher.search_file(&search.matcher, &f, &mut sink));
    if let Err(e) = searched {
        push_error(gathered, format!("{}: {e}", sink.file));
        return;
    }
    if sink.binary && !search.include_binary {
        gathered.binary_skipped.fetch_add(1, Ordering::Relaxed);
    }
    if sink.count == 0 {
        return;
    }
    gathered.files_with_matches.fetch_add(1, Ordering::Relaxed);
    gathered
        .total_matches
        .fetch_add(sink.count, Ordering::Relaxed);
    if let Ok(mut kept) = gathered.kept.lock() {
        for m in sink.found {
            let key = (m.file.clone(), m.line_number);
            if kept.len() >= search.max_matches
                && kept.last_key_value().is_some_and(|(last, _)| *last < key)
            {
                break;
            }
            kept.insert(key, m);
            if kept.len() > search.max_matches {
                kept.pop_last();
            }
        }
    }
}

struct FileSink<'a> {
    search: &'a Search,
    file: String,
    /// This file's first `max_matches` matches.
    found: Vec<FoundMatch>,
    pending_before: Vec<String>,
    count: u64,
    binary: bool,
}

fn line_text(bytes: &[u8]) -> String {
    let t = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let t = t.strip_suffix(b"\r").unwrap_or(t);
    let s = String::from_utf8_lossy(t);
    if s.chars().count() > MAX_LINE_CHARS {
        // Redacted before it is cut, so a cut never keeps part of a secret
        // (a whole line is left for the sweep, which reports what it masks).
        let s = crate::redact::clean_str(&s);
        let mut cut: String = s.chars().take(MAX_LINE_CHARS).collect();
        cut.push('…');
        cut
    } else {
        s.into_owned()
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _s: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        // A multi-line match is not possible (the line terminator is set), so one SinkMatch is one line.
        self.count += 1;
        let before = std::mem::take(&mut self.pending_before);
        if self.found.len() >= self.search.max_matches {
            return Ok(true);
        }
        let line = m.bytes();
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let mut covered = 0usize;
        let mut first: Option<usize> = None;
        let _ = self.search.matcher.find_iter(body, |mm| {
            first.get_or_insert(mm.start());
            covered += mm.end() - mm.start();
            true
        });
        let len = body.len().max(1);
        self.found.push(FoundMatch {
            file: self.file.clone(),
            line_number: m.line_number().unwrap_or(0),
            column: first.map_or(1, |c| c as u64 + 1),
            match_text: line_text(line),
            context_before: before,
            context_after: Vec::new(),
            match_score: ((covered.clamp(1, len) as f64 / len as f64) * 1000.0).round() / 1000.0,
        });
        Ok(true)
    }

    fn context(&mut self, _s: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let text = line_text(c.bytes());
        match c.kind() {
            SinkContextKind::Before => self.pending_before.push(text),
            SinkContextKind::After => {
                if let Some(last) = self.found.last_mut()
                    && last.line_number + last.context_after.len() as u64 + 1
                        == c.line_number().unwrap_or(0)
                {
                    last.context_after.push(text);
                }
            }
            SinkContextKind::Other => {}
        }
        Ok(true)
    }

    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(!self.binary || self.search.include_binary)
    }
}
