//! The git method: the workspace before and after the run as two git trees,
//! compared by `git diff-tree`.
//!
//! The user's repository is only read. The trees are built with `git add -A`
//! and `git write-tree` in a copy of the index (`GIT_INDEX_FILE`) and a private
//! object directory (`GIT_OBJECT_DIRECTORY`) in a temporary folder outside
//! the workspace, with the repository's objects as an alternate (read only).
//! Starting from the user's index keeps `git add` cheap (unchanged files are
//! not hashed again) and makes ignored files stay out exactly as git sees
//! them; files already present before the run (committed, staged, modified or
//! untracked) are in the first tree, so only what the run changed shows.
//!
//! git runs without a shell, stdin closed, `LC_ALL=C`, no prompt, no system
//! config, no optional locks, every inherited `GIT_*` variable dropped but a
//! few harmless ones, and with hooks, fsmonitor, external diff, textconv and
//! every configured clean/smudge/process filter off (files are compared as
//! they are on disk). Output is parsed from `-z` (NUL-separated) forms; the
//! unified diff is read as a stream and cut at [`SHOW_TOTAL`]. Each changed
//! file's new blob id (`--raw`) and the workspace's folder in its
//! repository (`--show-prefix`, before the first step) are kept for the
//! push (`publish::push`), which sends only those bytes, there.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use super::{
    Body, Change, Compared, FileChange, SHOW_LINE_BYTES, SHOW_LINES, SHOW_TOTAL, cut_line,
    escape_bytes, relative,
};

/// Longest one git command may take.
const TIMEOUT: Duration = Duration::from_secs(300);
/// Longest one git command may take once the run is stopping ([`stop`]).
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The run is stopping (a signal): git commands get [`STOP_TIMEOUT`].
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// How many times [`stop`] ran (a command started before a stop is ended by it).
static STOPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// The git commands running now, by process id (each leads its own group).
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// The run is stopping: end every git command running now (its whole
/// process group), and give the later ones [`STOP_TIMEOUT`] at most.
pub(super) fn stop() {
    STOPPING.store(true, std::sync::atomic::Ordering::SeqCst);
    STOPS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let live = LIVE.lock().unwrap_or_else(PoisonError::into_inner).clone();
    for pid in live {
        if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap_or(0))
            && !pid.is_init()
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}
/// Most output kept from a command whose output is parsed whole.
const OUTPUT_MAX: usize = 256 * 1024 * 1024;
/// Most bytes of one patch line kept before it is cut for display.
const LINE_KEEP: usize = 16 * 1024;

/// Settings that keep git from running anything or writing where it should not.
const CONFIG: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.quotepath=off",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.splitIndex=false",
    "core.ignoreStat=false",
    "core.looseCompression=1",
    "core.fsync=none",
    "core.fsyncObjectFiles=false",
    "diff.external=",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "color.ui=never",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
    "advice.addEmbeddedRepo=false",
    "advice.addIgnoredFile=false",
];

/// Inherited `GIT_*` variables git may keep (they locate things, they do not change behaviour).
const KEEP_ENV: &[&str] = &[
    "GIT_CEILING_DIRECTORIES",
    "GIT_CONFIG_GLOBAL",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_EXEC_PATH",
];

/// Why a git command did not give its output.
#[derive(Debug, thiserror::Error)]
pub(super) enum GitError {
    /// git could not be started.
    #[error("could not start git: {0}")]
    Spawn(std::io::Error),
    /// git ended unsuccessfully.
    #[error("`git {what}` ended with {}: {}", ended_with(*.code), one_line(.stderr))]
    Failed {
        what: &'static str,
        code: Option<i32>,
        stderr: String,
    },
    /// git took longer than [`TIMEOUT`] (or was ended because the run stopped).
    #[error("`git {0}` took longer than {TIMEOUT:?}, or was ended because the run stopped")]
    TimedOut(&'static str),
    /// git wrote more than plangate reads.
    #[error("`git {0}` wrote too much output")]
    TooLarge(&'static str),
}

/// Why the git method cannot record or compare the workspace (the tracker
/// says so in a note and, at the start, falls back to a snapshot).
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionError {
    /// A git command failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// git answered something plangate does not understand.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// `git write-tree` did not print a tree id.
    #[error("unexpected `git write-tree` output: {0:?}")]
    Tree(String),
    /// The workspace is ignored by the repository around it.
    #[error("the workspace is ignored by the repository around it")]
    Ignored,
    /// The private index and objects could not be set up.
    #[error("could not create a temporary folder: {0}")]
    TempDir(std::io::Error),
    /// The repository's index could not be copied to the private one.
    #[error("could not copy the index: {0}")]
    CopyIndex(std::io::Error),
}

/// git's output could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum OutputError {
    /// Not in the expected shape.
    #[error("unexpected `git {0}` output")]
    Unexpected(&'static str),
    /// The `--name-status` list did not end where it should.
    #[error("`git diff-tree --name-status` output was cut")]
    Cut,
}

/// "status N", or "a signal".
fn ended_with(code: Option<i32>) -> String {
    code.map_or_else(|| "a signal".to_owned(), |c| format!("status {c}"))
}

/// git's stderr on one (cut) line.
fn one_line(stderr: &str) -> String {
    let msg: String = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    cut_line(&msg)
}

/// One changed path as `--name-status -z` gives it.
#[derive(Debug, Clone)]
struct Entry {
    change: Change,
    path: Vec<u8>,
    old: Option<Vec<u8>>,
    /// The new blob id (`--raw`): a file or symbolic link that is still there.
    oid: Option<String>,
}

/// A private index and object directory over the user's repository.
pub(super) struct Session {
    git: OsString,
    workspace: PathBuf,
    /// Holds `index` and `objects`; removed when the session ends.
    _tmp: tempfile::TempDir,
    index: PathBuf,
    objects: PathBuf,
    alternates: OsString,
    /// `.` and an exclusion of each left-out folder: what `diff-tree` compares.
    pathspec: Vec<OsString>,
    /// The left-out folders inside the workspace, relative to it.
    excluded: Vec<PathBuf>,
    /// The workspace's folder inside the repository (`--show-prefix`:
    /// `""` or ending in `/`), as [`super::escape_bytes`] writes it.
    pub(super) prefix: String,
}

impl Session {
    /// A session when `workspace` is inside a git work tree; None when it is
    /// not (no note); Err when it is but git cannot be used.
    pub(super) fn open(
        workspace: &Path,
        exclude: &[PathBuf],
        git: &OsStr,
    ) -> Result<Option<Session>, SessionError> {
        let mut cmd = base(git, workspace);
        cmd.args([
            "rev-parse",
            "--show-prefix",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-path",
            "index",
            "--git-path",
            "objects",
        ]);
        let out = match output(cmd, "rev-parse") {
            Ok(out) => out,
            // git missing, or git saying no: not a repository unless a
            // `.git` is there (then git's refusal is worth a note). Decided
            // by looking, never by reading git's message.
            Err(e @ (GitError::Spawn(_) | GitError::Failed { .. })) => {
                return if inside_dot_git_tree(workspace) {
                    Err(e.into())
                } else {
                    Ok(None)
                };
            }
            Err(e) => return Err(e.into()),
        };
        let out = out.strip_suffix(b"\n").unwrap_or(&out);
        let lines: Vec<&[u8]> = out.split(|b| *b == b'\n').collect();
        let [prefix, _top, index, objects] = lines[..] else {
            return Err(OutputError::Unexpected("rev-parse").into());
        };
        // A workspace git ignores would look unchanged to `git add`.
        let mut cmd = base(git, workspace);
        cmd.args(["check-ignore", "-q", "."]);
        match output(cmd, "check-ignore") {
            Ok(_) => return Err(SessionError::Ignored),
            Err(GitError::Failed { code: Some(1), .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let real_index = PathBuf::from(OsStr::from_bytes(index));
        let tmp = tempfile::Builder::new()
            .prefix("plangate-diff-")
            .tempdir()
            .map_err(SessionError::TempDir)?;
        let session_index = tmp.path().join("index");
        let session_objects = tmp.path().join("objects");
        std::fs::create_dir(&session_objects).map_err(SessionError::TempDir)?;
        if real_index.is_file() {
            std::fs::copy(&real_index, &session_index).map_err(SessionError::CopyIndex)?;
        }
        let excluded: Vec<PathBuf> = exclude
            .iter()
            .filter_map(|x| relative(workspace, x))
            .filter(|r| !r.as_os_str().is_empty())
            .collect();
        let mut pathspec = vec![OsString::from(".")];
        pathspec.extend(excluded.iter().map(|r| exclusion(r)));
        Ok(Some(Session {
            git: git.to_owned(),
            workspace: workspace.to_path_buf(),
            _tmp: tmp,
            index: session_index,
            objects: session_objects,
            alternates: OsString::from_vec(alternate(objects)),
            pathspec,
            excluded,
            prefix: escape_bytes(prefix),
        }))
    }

    /// A git command on the private index and objects, with `filters` off.
    fn cmd(&self, filters: &[Vec<u8>]) -> Command {
        let mut c = base(&self.git, &self.workspace);
        c.env("GIT_INDEX_FILE", &self.index)
            .env("GIT_OBJECT_DIRECTORY", &self.objects)
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &self.alternates);
        let mut n = 0usize;
        for name in filters {
            for (key, value) in [
                ("clean", ""),
                ("smudge", ""),
                ("process", ""),
                ("required", "false"),
            ] {
                let mut k = b"filter.".to_vec();
                k.extend_from_slice(name);
                k.push(b'.');
                k.extend_from_slice(key.as_bytes());
                c.env(format!("GIT_CONFIG_KEY_{n}"), OsString::from_vec(k))
                    .env(format!("GIT_CONFIG_VALUE_{n}"), value);
                n += 1;
            }
        }
        c.env("GIT_CONFIG_COUNT", n.to_string());
        c
    }

    /// The names of the configured filter drivers (read again each time: a
    /// step may have added one).
    fn filters(&self) -> Result<Vec<Vec<u8>>, GitError> {
        let mut c = self.cmd(&[]);
        c.args(["config", "-z", "--get-regexp", r"^filter\."]);
        let out = match output(c, "config") {
            Ok(out) => out,
            // Status 1: no such key.
            Err(GitError::Failed { code: Some(1), .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut names: Vec<Vec<u8>> = Vec::new();
        for item in out.split(|b| *b == 0).filter(|i| !i.is_empty()) {
            let key = item.split(|b| *b == b'\n').next().unwrap_or_default();
            let Some(rest) = key.strip_prefix(b"filter.") else {
                continue;
            };
            let Some(dot) = rest.iter().rposition(|b| *b == b'.') else {
                continue;
            };
            let name = rest[..dot].to_vec();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        Ok(names)
    }

    /// The pathspec of `git add`: `.` and an exclusion of each left-out
    /// folder git does not ignore already. An ignored one is left out by git
    /// itself, and must not be named: `git add` reports an ignored path that
    /// any pathspec names (an exclusion too) and exits 1, which would throw
    /// the git method away whenever the user's `.gitignore` lists the output
    /// folder. `--ignore-errors` does not help (it covers files that cannot
    /// be read, not ignored ones), so the folder is checked with `git
    /// check-ignore --no-index` (the patterns alone) before every `add`: a
    /// step may have edited a `.gitignore` since the last one. `diff-tree`
    /// keeps every exclusion, so the folder never shows either way.
    fn add_pathspec(&self) -> Result<(Vec<OsString>, Vec<Costly>), SessionError> {
        let mut pathspec = vec![OsString::from(".")];
        // What `git add` refuses (and would fail whole on): a path with a
        // `.git` component in another case, a nested repository without a
        // commit. Left out here; the files there are listed from the
        // record of every file (`ignored.rs`).
        let (unaddable, costly) = scan(&self.workspace, &self.excluded, true);
        pathspec.extend(unaddable.iter().map(|r| exclusion(r)));
        for rel in &self.excluded {
            let mut c = self.cmd(&[]);
            c.args(["check-ignore", "-q", "--no-index", "--"]).arg(rel);
            match output(c, "check-ignore") {
                Ok(_) => {}
                Err(GitError::Failed { code: Some(1), .. }) => pathspec.push(exclusion(rel)),
                Err(e) => return Err(e.into()),
            }
        }
        Ok((pathspec, costly))
    }

    /// Record each of `files` in the private index by a stand-in, a line
    /// naming its size and times: git would read it whole (a sparse file of
    /// a terabyte takes hours), at a cost the step that made it did not pay.
    /// A change of its size or times shows as a change of that line.
    fn stand_ins(&self, files: &[Costly]) -> Result<(), SessionError> {
        if files.is_empty() {
            return Ok(());
        }
        let dir = self._tmp.path().join("stand-ins");
        std::fs::create_dir_all(&dir).map_err(SessionError::TempDir)?;
        for chunk in files.chunks(256) {
            let mut texts = Vec::new();
            for (i, (_, m)) in chunk.iter().enumerate() {
                let p = dir.join(i.to_string());
                let line = format!(
                    "plangate: not compared by content ({} bytes, {} allocated; modified {}.{:09}, changed {}.{:09}, inode {})\n",
                    m.size(),
                    m.blocks().saturating_mul(512),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                    m.ino()
                );
                std::fs::write(&p, line).map_err(SessionError::TempDir)?;
                texts.push(p);
            }
            let mut hash = self.cmd(&[]);
            hash.args(["hash-object", "-w", "--no-filters", "--"])
                .args(&texts);
            let out = output(hash, "hash-object")?;
            let oids: Vec<&[u8]> = out
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .collect();
            if oids.len() != chunk.len() {
                return Err(OutputError::Unexpected("hash-object").into());
            }
            let mut update = self.cmd(&[]);
            update.args(["update-index", "--add"]);
            for ((rel, m), oid) in chunk.iter().zip(oids) {
                let mode = if m.mode() & 0o100 == 0 {
                    "100644"
                } else {
                    "100755"
                };
                let mut info = format!("{mode},").into_bytes();
                info.extend_from_slice(oid);
                info.push(b',');
                info.extend_from_slice(rel.as_os_str().as_bytes());
                update.arg("--cacheinfo").arg(OsString::from_vec(info));
            }
            output(update, "update-index")?;
        }
        Ok(())
    }

    /// Record the workspace as a tree in the private index; returns its id.
    pub(super) fn record(&self) -> Result<String, SessionError> {
        let filters = self.filters()?;
        let (mut pathspec, costly) = self.add_pathspec()?;
        pathspec.extend(costly.iter().map(|(rel, _)| exclusion(rel)));
        let mut add = self.cmd(&filters);
        add.args(["add", "-A", "--"]).args(&pathspec);
        output(add, "add")?;
        self.stand_ins(&costly)?;
        let mut wt = self.cmd(&filters);
        wt.arg("write-tree");
        let out = output(wt, "write-tree")?;
        let tree = String::from_utf8_lossy(&out).trim().to_owned();
        if tree.is_empty() || !tree.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(SessionError::Tree(tree));
        }
        Ok(tree)
    }

    /// What changed from tree `before` to tree `after`.
    pub(super) fn compare(&self, before: &str, after: &str) -> Result<Compared, SessionError> {
        let diff_tree = |format: &str| {
            let mut c = self.cmd(&[]);
            c.args([
                "diff-tree",
                "-r",
                "-M",
                "--relative",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                format,
            ]);
            c
        };
        let mut c = diff_tree("--raw");
        c.args(["--no-abbrev", "-z", before, after, "--"])
            .args(&self.pathspec);
        let entries = parse_name_status(&output(c, "diff-tree")?)?;
        let mut c = diff_tree("--numstat");
        c.args(["-z", before, after, "--"]).args(&self.pathspec);
        let stats = parse_numstat(&output(c, "diff-tree")?)?;

        let mut notes = Vec::new();
        let mut patch = Patch::default();
        let mut c = diff_tree("--patch");
        c.args(["--src-prefix=a/", "--dst-prefix=b/", before, after, "--"])
            .args(&self.pathspec);
        let read = run(c, "diff-tree", &mut |chunk| patch.feed(chunk));
        patch.end();
        let mut lined_up = true;
        if let Err(e) = read {
            notes.push(format!("the unified diffs could not be read ({e})"));
            lined_up = false;
        } else if patch.sections.len() > entries.len()
            || patch
                .sections
                .iter()
                .zip(&entries)
                .any(|(s, e)| s.header != header(e))
        {
            notes
                .push("git's patch did not line up with its list of files; diffs not shown".into());
            lined_up = false;
        }
        if patch.stopped {
            notes.push(format!(
                "diffs are shown up to {} KiB; the table lists every file",
                SHOW_TOTAL / 1024
            ));
        }
        let mut sections = patch.sections.into_iter();
        let mut files = Vec::with_capacity(entries.len());
        for e in entries {
            let section = sections.next();
            let (insertions, deletions, binary) = stats.get(&e.path).copied().unwrap_or_default();
            let body = if binary {
                Body::Binary
            } else if !lined_up {
                Body::NotShown("see the notes")
            } else {
                match section {
                    Some(s) => Body::Text {
                        lines: s.lines,
                        more: s.more,
                        cut: s.cut,
                    },
                    None => Body::NotShown("the summary is full"),
                }
            };
            let f = FileChange {
                path: escape_bytes(&e.path),
                change: e.change,
                insertions,
                deletions,
                binary,
                old_path: e.old.as_deref().map(escape_bytes),
                steps: Vec::new(),
                ignored: false,
                oid: e.oid,
            };
            files.push((f, body));
        }
        Ok(Compared { files, notes })
    }
}

/// A file `git add` is not given (relative), with its metadata.
type Costly = (PathBuf, std::fs::Metadata);

/// The paths under `workspace` (relative) that `git add` cannot take: every
/// entry named `.git` in any case but the workspace's own `.git`, and every
/// folder holding one (a nested repository: its files are compared one by
/// one instead, it may have no commit to record). Links not followed;
/// `excluded` (relative) left out.
pub(super) fn unaddable(workspace: &Path, excluded: &[PathBuf]) -> Vec<PathBuf> {
    scan(workspace, excluded, false).0
}

/// [`unaddable`], and with `costly` the files [`super::costly`] to add
/// beside them (each file's metadata read: only then).
fn scan(workspace: &Path, excluded: &[PathBuf], costly: bool) -> (Vec<PathBuf>, Vec<Costly>) {
    let mut out = Vec::new();
    let mut heavy = Vec::new();
    let mut walk = walkdir::WalkDir::new(workspace)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    while let Some(e) = walk.next() {
        let Ok(e) = e else { continue };
        if e.depth() == 0 {
            continue;
        }
        let Some(rel) = relative(workspace, e.path()) else {
            continue;
        };
        if excluded.contains(&rel) || (e.depth() == 1 && e.file_name() == ".git") {
            if e.file_type().is_dir() {
                walk.skip_current_dir();
            }
            continue;
        }
        let nested = e.file_type().is_dir()
            && std::fs::read_dir(e.path()).is_ok_and(|rd| {
                rd.flatten()
                    .any(|c| crate::regular::is_dot_git(&c.file_name()))
            });
        if crate::regular::is_dot_git(e.file_name()) || nested {
            out.push(rel);
            if e.file_type().is_dir() {
                walk.skip_current_dir();
            }
        } else if costly
            && e.file_type().is_file()
            && let Ok(m) = e.metadata()
            && super::costly(&m)
        {
            heavy.push((rel, m));
        }
    }
    (out, heavy)
}

/// Which of `paths` (relative to `dir`, `/`-separated) git's ignore rules
/// (`.gitignore`, `.git/info/exclude`, the global excludes) leave out; None
/// when git cannot say.
pub(super) fn ignored_among(
    dir: &Path,
    paths: &[String],
) -> Option<std::collections::HashSet<String>> {
    let mut out = std::collections::HashSet::new();
    for chunk in paths.chunks(256) {
        let mut c = base(OsStr::new("git"), dir);
        // One name a line (`-z` needs `--stdin`); a name git had to quote is
        // not matched, so it stays unlabelled.
        c.args(["check-ignore", "--"]).args(chunk);
        match output(c, "check-ignore") {
            Ok(o) => out.extend(
                o.split(|b| *b == b'\n')
                    .filter(|p| !p.is_empty())
                    .map(|p| String::from_utf8_lossy(p).into_owned()),
            ),
            // Status 1: none of them is ignored.
            Err(GitError::Failed { code: Some(1), .. }) => {}
            Err(_) => return None,
        }
    }
    Some(out)
}

/// A git command: no shell, stdin closed, a clean environment, the safe settings.
fn base(git: &OsStr, cwd: &Path) -> Command {
    let mut c = Command::new(git);
    c.current_dir(cwd);
    // plangate's environment is sealed (`crate::environ`): the child gets the
    // copy, less the inherited `GIT_*` variables.
    c.env_clear();
    for (k, v) in crate::environ::vars_os() {
        let kb = k.as_bytes();
        if !kb.starts_with(b"GIT_") || KEEP_ENV.iter().any(|x| x.as_bytes() == kb) {
            c.env(&k, &v);
        }
    }
    c.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C");
    for kv in CONFIG {
        c.arg("-c").arg(kv);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group: a Ctrl-C at the terminal interrupts the run,
    // not the diff the interrupted run still reports.
    c.process_group(0);
    c
}

/// The commit `HEAD` names in the work tree holding `dir` (None outside a
/// work tree, on an unborn branch, or when git fails): read with the same
/// safe command as the diff (no hooks, no system config, stdin closed).
pub(super) fn head(dir: &Path) -> Option<String> {
    if !inside_dot_git_tree(dir) {
        return None;
    }
    let mut c = base(OsStr::new("git"), dir);
    c.args(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]);
    let out = output(c, "rev-parse").ok()?;
    let text = String::from_utf8(out).ok()?;
    let head = text.trim();
    (!head.is_empty() && head.bytes().all(|b| b.is_ascii_hexdigit())).then(|| head.to_owned())
}

/// A read-only git command's whole output (at most [`OUTPUT_MAX`] bytes),
/// run like the diff's own (no shell, stdin closed, the safe settings, its
/// own process group, at most [`TIMEOUT`]), with no transport allowed (a
/// partial clone never fetches) and no signature checked; an error says why.
pub(super) fn read_only(cwd: &Path, args: &[&OsStr]) -> Result<Vec<u8>, String> {
    let mut c = base(crate::environ::git().as_os_str(), cwd);
    c.args([
        "-c",
        "protocol.allow=never",
        "-c",
        "log.showSignature=false",
        "-c",
        "safe.directory=*",
    ])
    .env("GIT_NO_LAZY_FETCH", "1")
    .args(args);
    output(c, "read").map_err(|e| e.to_string())
}

/// `:(exclude,literal)REL`.
fn exclusion(rel: &Path) -> OsString {
    let mut p = b":(exclude,literal)".to_vec();
    p.extend_from_slice(rel.as_os_str().as_bytes());
    OsString::from_vec(p)
}

/// Whether `dir` or a parent has a `.git`: tells "not a repository" (no note)
/// from "git is missing or refuses this repository" (a note says why).
fn inside_dot_git_tree(dir: &Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}

/// An entry for `GIT_ALTERNATE_OBJECT_DIRECTORIES` (quoted when it holds `:` or starts with `"`).
fn alternate(path: &[u8]) -> Vec<u8> {
    if path.contains(&b':') || path.first() == Some(&b'"') {
        let mut q = vec![b'"'];
        q.extend(escape_c(path));
        q.push(b'"');
        q
    } else {
        path.to_vec()
    }
}

/// git's C-style escaping of one name (quote.c `quote_c_style`, `core.quotepath=off`).
fn escape_c(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 2);
    for &b in name {
        match b {
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0b => out.extend_from_slice(b"\\v"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b if b < 0x20 || b == 0x7f => out.extend_from_slice(format!("\\{b:03o}").as_bytes()),
            b => out.push(b),
        }
    }
    out
}

/// A name as git writes it in a patch header: quoted when it must be.
pub(super) fn quote_c(name: &[u8]) -> Vec<u8> {
    if name
        .iter()
        .any(|&b| b < 0x20 || b == 0x7f || b == b'"' || b == b'\\')
    {
        let mut q = vec![b'"'];
        q.extend(escape_c(name));
        q.push(b'"');
        q
    } else {
        name.to_vec()
    }
}

/// The `diff --git` line git writes for an entry.
fn header(e: &Entry) -> Vec<u8> {
    let old = e.old.as_deref().unwrap_or(&e.path);
    let mut a = b"a/".to_vec();
    a.extend_from_slice(old);
    let mut b = b"b/".to_vec();
    b.extend_from_slice(&e.path);
    let mut h = b"diff --git ".to_vec();
    h.extend(quote_c(&a));
    h.push(b' ');
    h.extend(quote_c(&b));
    h
}

/// The new blob id of a `--raw` status token (`:MODE MODE OID OID STATUS`):
/// a regular file or symbolic link still there (not a submodule, not deleted).
fn raw_oid(status: &[u8]) -> Option<String> {
    let fields: Vec<&[u8]> = status.split(|b| *b == b' ').collect();
    let [_, mode, _, oid, _] = fields[..] else {
        return None;
    };
    let blob = matches!(mode, b"100644" | b"100755" | b"120000");
    let hex = matches!(oid.len(), 40 | 64)
        && oid.iter().all(|b| b.is_ascii_hexdigit())
        && oid.iter().any(|b| *b != b'0');
    (blob && hex).then(|| String::from_utf8_lossy(oid).to_ascii_lowercase())
}

/// `--raw -z` (or `--name-status -z`): `[:MODE MODE OID OID ]STATUS\0PATH\0`,
/// or `...R<score>\0OLD\0NEW\0`.
fn parse_name_status(out: &[u8]) -> Result<Vec<Entry>, OutputError> {
    let mut entries = Vec::new();
    let Some(out) = out.strip_suffix(b"\0") else {
        return if out.is_empty() {
            Ok(entries)
        } else {
            Err(OutputError::Cut)
        };
    };
    let mut tokens = out.split(|b| *b == 0);
    let bad = || OutputError::Unexpected("diff-tree --name-status");
    let path = |t: Option<&[u8]>| {
        t.filter(|t| !t.is_empty())
            .map(<[u8]>::to_vec)
            .ok_or_else(bad)
    };
    while let Some(token) = tokens.next() {
        let (status, oid) = if token.first() == Some(&b':') {
            let status = token.rsplit(|b| *b == b' ').next().unwrap_or_default();
            (status, raw_oid(token))
        } else {
            (token, None)
        };
        let Some(&letter) = status.first() else {
            return Err(bad());
        };
        let first = path(tokens.next())?;
        let entry = match letter {
            b'A' => Entry {
                change: Change::Added,
                path: first,
                old: None,
                oid: oid.clone(),
            },
            b'D' => Entry {
                change: Change::Deleted,
                path: first,
                old: None,
                oid: oid.clone(),
            },
            b'R' => Entry {
                change: Change::Renamed,
                path: path(tokens.next())?,
                old: Some(first),
                oid: oid.clone(),
            },
            // A copy (not asked for) is a new file.
            b'C' => Entry {
                change: Change::Added,
                path: path(tokens.next())?,
                old: None,
                oid: oid.clone(),
            },
            // M (content or mode), T (type), U, X: changed in place.
            _ => Entry {
                change: Change::Modified,
                path: first,
                old: None,
                oid: oid.clone(),
            },
        };
        entries.push(entry);
    }
    Ok(entries)
}

/// `--numstat -z`: `ADDED\tDELETED\tPATH\0`, or `ADDED\tDELETED\t\0OLD\0NEW\0`;
/// `-` for both counts means binary. Keyed by the new path.
fn parse_numstat(out: &[u8]) -> Result<Stats, OutputError> {
    let mut stats = HashMap::new();
    let bad = || OutputError::Unexpected("diff-tree --numstat");
    let Some(out) = out.strip_suffix(b"\0") else {
        return if out.is_empty() {
            Ok(stats)
        } else {
            Err(bad())
        };
    };
    let mut tokens = out.split(|b| *b == 0);
    while let Some(t) = tokens.next() {
        let mut parts = t.splitn(3, |b| *b == b'\t');
        let (Some(ins), Some(del), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let path = if path.is_empty() {
            tokens.next().ok_or_else(bad)?;
            tokens.next().ok_or_else(bad)?
        } else {
            path
        };
        let number = |n: &[u8]| {
            std::str::from_utf8(n)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
        };
        let value = match (number(ins), number(del)) {
            (Some(i), Some(d)) => (i, d, false),
            _ if ins == b"-" && del == b"-" => (0, 0, true),
            _ => return Err(bad()),
        };
        stats.insert(path.to_vec(), value);
    }
    Ok(stats)
}

/// Lines added, removed, binary: by (new) path.
type Stats = HashMap<Vec<u8>, (u64, u64, bool)>;

/// One file's part of the patch.
#[derive(Debug, Default)]
struct Section {
    /// The `diff --git` line, raw.
    header: Vec<u8>,
    lines: Vec<String>,
    more: usize,
    cut: bool,
    /// Still in the extended header (before `---`, `@@` or `Binary files`).
    in_header: bool,
}

/// The unified diff read as a stream: each file's first [`SHOW_LINES`]
/// lines, stopping once [`SHOW_TOTAL`] bytes are kept.
#[derive(Debug, Default)]
struct Patch {
    sections: Vec<Section>,
    line: Vec<u8>,
    kept: usize,
    stopped: bool,
}

impl Patch {
    /// Take a chunk of output; false to stop reading.
    fn feed(&mut self, chunk: &[u8]) -> bool {
        for piece in chunk.split_inclusive(|b| *b == b'\n') {
            let (body, ends) = match piece.strip_suffix(b"\n") {
                Some(b) => (b, true),
                None => (piece, false),
            };
            let room = LINE_KEEP.saturating_sub(self.line.len());
            self.line.extend_from_slice(&body[..body.len().min(room)]);
            if ends {
                self.end_line();
                if self.kept >= SHOW_TOTAL {
                    self.stopped = true;
                    if let Some(s) = self.sections.last_mut() {
                        s.cut = true;
                    }
                    return false;
                }
            }
        }
        true
    }

    /// The output ended: a last line without a newline.
    fn end(&mut self) {
        if !self.line.is_empty() && !self.stopped {
            self.end_line();
        }
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        if line.starts_with(b"diff --git ") {
            self.sections.push(Section {
                header: line,
                in_header: true,
                ..Section::default()
            });
            return;
        }
        let Some(s) = self.sections.last_mut() else {
            return;
        };
        if s.in_header {
            if line.starts_with(b"--- ")
                || line.starts_with(b"@@")
                || line.starts_with(b"Binary files ")
            {
                s.in_header = false;
            } else if line.starts_with(b"index ") {
                return; // blob ids of the private trees: noise
            }
        }
        if s.lines.len() < SHOW_LINES {
            let text = escape_bytes(&line[..line.len().min(SHOW_LINE_BYTES * 4)]);
            let text = cut_line(&text);
            self.kept += text.len() + 1;
            s.lines.push(text);
        } else {
            s.more += 1;
        }
    }
}

/// Run a git command for its whole output (at most [`OUTPUT_MAX`] bytes).
fn output(cmd: Command, what: &'static str) -> Result<Vec<u8>, GitError> {
    let mut out = Vec::new();
    let mut too_large = false;
    run(cmd, what, &mut |chunk| {
        if out.len() + chunk.len() > OUTPUT_MAX {
            too_large = true;
            return false;
        }
        out.extend_from_slice(chunk);
        true
    })?;
    if too_large {
        return Err(GitError::TooLarge(what));
    }
    Ok(out)
}

/// Run a git command, handing its stdout to `sink` chunk by chunk until it
/// returns false (then git is stopped: not an error). Killed after [`TIMEOUT`].
fn run(
    mut cmd: Command,
    what: &'static str,
    sink: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<(), GitError> {
    let stops = STOPS.load(std::sync::atomic::Ordering::SeqCst);
    let mut child = cmd.spawn().map_err(GitError::Spawn)?;
    let pid = child.id();
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(pid);
    // A stop that came between the spawn and the line above missed it.
    if STOPS.load(std::sync::atomic::Ordering::SeqCst) != stops {
        let _ = child.kill();
    }
    let result = run_child(child, what, sink);
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|p| *p != pid);
    result
}

/// [`run`] once git started.
fn run_child(
    mut child: Child,
    what: &'static str,
    sink: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<(), GitError> {
    let pid = child.id();
    let timeout = if STOPPING.load(std::sync::atomic::Ordering::SeqCst) {
        STOP_TIMEOUT
    } else {
        TIMEOUT
    };
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut e) = stderr {
            let _ = e.by_ref().take(8192).read_to_end(&mut buf);
            let _ = std::io::copy(&mut e, &mut std::io::sink());
        }
        buf
    });
    let child = Arc::new(Mutex::new(child));
    // The whole group: a helper git started (a filter, `git-remote-*`) too.
    let kill = move |c: &Arc<Mutex<Child>>| {
        if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap_or(0))
            && !pid.is_init()
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let mut guard = c.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = guard.kill();
    };
    let (done, wait_done) = mpsc::channel::<()>();
    let watchdog = {
        let child = Arc::clone(&child);
        std::thread::spawn(move || {
            let fired = matches!(
                wait_done.recv_timeout(timeout),
                Err(mpsc::RecvTimeoutError::Timeout)
            );
            if fired {
                kill(&child);
            }
            fired
        })
    };
    let mut stopped = false;
    if let Some(mut out) = stdout {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match out.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if !sink(&buf[..n]) {
                        stopped = true;
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
    if stopped {
        kill(&child);
    }
    let _ = done.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    let status = child
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .wait()
        .map_err(GitError::Spawn)?;
    let stderr = String::from_utf8_lossy(&errors.join().unwrap_or_default()).into_owned();
    if timed_out {
        return Err(GitError::TimedOut(what));
    }
    if !status.success() && !stopped {
        return Err(GitError::Failed {
            what,
            code: status.code(),
            stderr,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_quoted_like_git() {
        let e = Entry {
            change: Change::Renamed,
            path: b"new name.txt".to_vec(),
            old: Some(b"tab\there\xe9\"q\\".to_vec()),
            oid: None,
        };
        assert_eq!(
            header(&e),
            b"diff --git \"a/tab\\there\xe9\\\"q\\\\\" b/new name.txt".to_vec()
        );
        assert_eq!(alternate(b"/a:b"), b"\"/a:b\"".to_vec());
        assert_eq!(quote_c(b"\x01\x7f"), b"\"\\001\\177\"".to_vec());
    }

    #[test]
    fn name_status_and_numstat_parse_renames_and_binaries() {
        let ns = b"M\0a.txt\0R100\0old name\0new\xe9\0A\0bin\0D\0gone\0";
        let e = parse_name_status(ns).unwrap_or_else(|e| panic!("{e}"));
        type Got<'a> = (Change, &'a [u8], Option<&'a [u8]>);
        let got: Vec<Got> = e
            .iter()
            .map(|e| (e.change, e.path.as_slice(), e.old.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Change::Modified, &b"a.txt"[..], None),
                (Change::Renamed, &b"new\xe9"[..], Some(&b"old name"[..])),
                (Change::Added, &b"bin"[..], None),
                (Change::Deleted, &b"gone"[..], None),
            ]
        );
        let n = parse_numstat(b"2\t1\ta.txt\x000\t0\t\0old name\0new\xe9\0-\t-\tbin\0")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(n.get(&b"a.txt"[..]), Some(&(2, 1, false)));
        assert_eq!(n.get(&b"new\xe9"[..]), Some(&(0, 0, false)));
        assert_eq!(n.get(&b"bin"[..]), Some(&(0, 0, true)));
        let raw = b":100644 100755 1111111111111111111111111111111111111111 AbCdEf0123456789abcdef0123456789abcdef01 M\0a.txt\0:100644 000000 1111111111111111111111111111111111111111 0000000000000000000000000000000000000000 D\0gone\0:120000 120000 0000000000000000000000000000000000000000 2222222222222222222222222222222222222222 R090\0old\0new\0:000000 160000 0000000000000000000000000000000000000000 3333333333333333333333333333333333333333 A\0sub\0";
        let e = parse_name_status(raw).unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(Change, Option<&str>)> =
            e.iter().map(|e| (e.change, e.oid.as_deref())).collect();
        assert_eq!(
            got,
            vec![
                (
                    Change::Modified,
                    Some("abcdef0123456789abcdef0123456789abcdef01")
                ),
                (Change::Deleted, None),
                (
                    Change::Renamed,
                    Some("2222222222222222222222222222222222222222")
                ),
                (Change::Added, None),
            ],
            "a submodule's commit is no blob"
        );
        assert!(parse_name_status(b"M\0").is_err());
        assert!(parse_name_status(b"R100\0old\0").is_err());
        assert!(parse_name_status(b"M\0a.txt").is_err());
        assert_eq!(parse_name_status(b"").map(|e| e.len()), Ok(0));
        assert!(parse_numstat(b"x\ty\tz\0").is_err());
        assert!(parse_numstat(b"1\t1\t\0old\0").is_err());
    }

    #[test]
    fn the_patch_reader_keeps_the_first_lines_of_each_file_and_stops_when_full() {
        let mut p = Patch::default();
        let mut text =
            b"diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
                .to_vec();
        text.extend_from_slice(b"diff --git a/y b/y\n");
        for i in 0..(SHOW_LINES + 5) {
            text.extend_from_slice(format!("+{i}\n").as_bytes());
        }
        // Fed in awkward pieces.
        for chunk in text.chunks(7) {
            assert!(p.feed(chunk));
        }
        p.end();
        assert_eq!(p.sections.len(), 2);
        assert_eq!(
            p.sections[0].lines,
            vec!["--- a/x", "+++ b/x", "@@ -1 +1 @@", "-a", "+b"]
        );
        assert_eq!(p.sections[1].lines.len(), SHOW_LINES);
        assert_eq!(p.sections[1].more, 5);

        let mut full = Patch::default();
        let long = format!("+{}\n", "x".repeat(SHOW_LINE_BYTES * 2));
        let mut files = 0;
        'feed: loop {
            files += 1;
            assert!(full.feed(format!("diff --git a/{files} b/{files}\n").as_bytes()));
            for _ in 0..SHOW_LINES {
                if !full.feed(long.as_bytes()) {
                    break 'feed;
                }
            }
        }
        // A file shows at most SHOW_LINES lines (cut at SHOW_LINE_BYTES), so it takes two to fill the summary.
        assert_eq!(files, 2);
        assert!(full.stopped);
        assert!(full.sections[1].cut && !full.sections[0].cut);
        assert!(full.sections[0].lines[0].ends_with('…'));
    }
}
