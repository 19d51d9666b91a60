//! The sweep: every file a step leaves in the output folder is scanned, as
//! bytes (binary or not, whatever its size), and rewritten with its secrets
//! replaced; symbolic links there are removed. After each step
//! ([`sweep`]) and once more over the whole output folder before the run
//! ends ([`sweep_output_folder`]): what a step wrote outside its listed
//! artifacts, or after its own sweep, is caught too.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::model::{Finding, StepOutcome};
use crate::tools::StepContext;

/// Files up to this size are read whole; larger ones in pieces.
const WHOLE_MAX: u64 = 16 * 1024 * 1024;
/// The size of one piece of a larger file (cut after a newline when there is one).
const PIECE: u64 = 8 * 1024 * 1024;

/// The files of the output folder plangate writes itself, through the
/// redaction layer, at any time: the final sweep leaves them alone.
const OWN_FILES: &[&str] = &[
    "report.json",
    "audit.jsonl",
    "diff-summary.md",
    "artifacts/manifest.json",
];

/// A file's size, inode and status-change time (ctime: a step can set the
/// modification time back with `touch -d`, not the ctime, which any write,
/// rename or `touch` moves to now).
type Stamp = (u64, (u64, i64, i64));

/// Files already swept, with their [`Stamp`] as left: the final sweep
/// skips them when unchanged.
fn swept() -> std::sync::MutexGuard<'static, HashMap<PathBuf, Stamp>> {
    static S: OnceLock<Mutex<HashMap<PathBuf, Stamp>>> = OnceLock::new();
    S.get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

fn stamp(path: &Path) -> Option<Stamp> {
    std::fs::symlink_metadata(path).ok().map(|m| stamp_of(&m))
}

fn stamp_of(m: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    (m.len(), (m.ino(), m.ctime(), m.ctime_nsec()))
}

/// Scan what a step produced for secrets: every artifact file (which is then
/// rewritten with the secrets replaced, so the output directory never holds
/// one), every other file of its artifact folder, and every workspace file
/// the step wrote through plangate (reported, left as written: it is the
/// step's product). Values are remembered by the redaction layer and never
/// stored. In artifacts, the values the redaction layer already knows
/// (declared secrets, credentials of plangate's environment) are masked
/// first and are not findings: plangate passed them.
pub(crate) fn sweep(outcome: &mut StepOutcome, ctx: &StepContext, step_id: &str) {
    // A tool's own findings (an `http_request` credential header) are this step's.
    for f in &mut outcome.findings {
        f.step.get_or_insert_with(|| step_id.to_owned());
    }
    // (location, path, rewrite, listed: plangate expects a file there)
    let mut targets: Vec<(String, PathBuf, bool, bool)> = outcome
        .artifacts
        .iter()
        .map(|rel| (rel.clone(), ctx.out_dir.join(rel), true, true))
        .collect();
    // Files the step wrote into its folder itself (`$PLANGATE_STEP_ARTIFACTS`) are output too.
    let walk = unlisted_files(
        &ctx.artifacts_dir,
        &ctx.artifacts_rel,
        &outcome.artifacts,
        Some(step_id),
    );
    for (location, why, removed) in walk.refused {
        let f = unscannable_as(Some(step_id.to_owned()), location, &why, removed);
        outcome.findings.push(f);
    }
    for rel in walk.files {
        let path = ctx.out_dir.join(&rel);
        targets.push((rel, path, true, false));
    }
    targets.extend(outcome.workspace_files.iter().map(|rel| {
        (
            format!("workspace:{rel}"),
            ctx.env.workspace.join(rel),
            false,
            true,
        )
    }));
    for (location, path, rewrite, listed) in targets {
        if rewrite && outcome.truncated && is_capped_stream(&location) {
            drop_partial_word(&path, ctx.max_output_bytes);
        }
        match sweep_file(&path, rewrite) {
            Ok(found) => outcome.findings.extend(found.into_iter().map(|f| Finding {
                rule: f.rule,
                step: Some(step_id.to_owned()),
                location: location.clone(),
                line: f.line as u64,
                fingerprint: f.fingerprint,
            })),
            Err(e) if e.special && !listed && !e.kept => special_removed(&location, &e.why),
            Err(e) => {
                let f = unscannable_as(Some(step_id.to_owned()), location, &e.why, !e.kept);
                if !outcome
                    .findings
                    .iter()
                    .any(|g| g.fingerprint == f.fingerprint)
                {
                    outcome.findings.push(f);
                }
            }
        }
    }
}

/// The rule of a file the sweep could not read or rewrite: it was withheld
/// (removed from the output folder; a workspace file is left as the step
/// wrote it) and the run fails with exit 4 whatever `fail_on_secrets` says.
pub(crate) const UNSCANNABLE: &str = "unscannable";

/// Whether a finding is an [`UNSCANNABLE`] file (or a sweep or scan that
/// failed), not a secret.
pub(crate) fn is_unscannable(f: &Finding) -> bool {
    f.rule == UNSCANNABLE
}

/// The finding of a file (or a whole sweep or scan) that could not be
/// scanned, with a warning on stderr that says why.
pub(crate) fn unscannable(step: Option<String>, location: String, why: &str) -> Finding {
    unscannable_as(step, location, why, true)
}

/// [`unscannable`], saying whether the file was withheld (`removed`) or is
/// still there (`why` then says where).
fn unscannable_as(step: Option<String>, location: String, why: &str, removed: bool) -> Finding {
    if removed {
        crate::output::warning(format_args!(
            "`{location}` could not be scanned for secrets ({why}); it is withheld and the run fails (exit 4)"
        ));
    } else {
        crate::output::warning(format_args!(
            "`{location}` could not be scanned for secrets ({why}); the run fails (exit 4)"
        ));
    }
    Finding {
        rule: UNSCANNABLE.to_owned(),
        step,
        fingerprint: format!("{UNSCANNABLE}:{location}"),
        location,
        line: 0,
    }
}

/// A FIFO, socket or device a step left in the output folder: it holds no
/// bytes to scan; it is removed (so nobody reading the folder blocks on it),
/// with a warning.
fn special_removed(location: &str, why: &str) {
    crate::output::warning(format_args!(
        "`{location}` was removed from the output folder ({why})"
    ));
}

/// Why a file could not be swept.
struct SweepError {
    /// It is a FIFO, socket, device or directory ([`crate::regular`]).
    special: bool,
    /// It was removed or renamed away after it was listed: nothing is left
    /// to scan (a vanished file is not an unscannable one).
    gone: bool,
    /// It could not be withheld either: it is still in the output folder
    /// (`why` says where).
    kept: bool,
    why: String,
}

impl SweepError {
    fn io(doing: &str, e: &std::io::Error) -> SweepError {
        SweepError {
            special: crate::regular::is_not_regular(e),
            gone: e.kind() == std::io::ErrorKind::NotFound,
            kept: false,
            why: format!("cannot {doing} it: {e}"),
        }
    }
}

/// Remove a file the sweep could not scan or rewrite from the output
/// folder (its folder made writable first; a folder in its place with all
/// it holds). When it cannot be removed: emptied if it is a file; what is
/// left and where otherwise (the error says so).
fn withhold(path: &Path) -> Result<(), String> {
    swept().remove(path);
    let Err(e) = super::withhold::remove(path) else {
        return Ok(());
    };
    let emptied = crate::regular::open_rw(path).is_ok_and(|f| f.set_len(0).is_ok());
    Err(if emptied {
        format!(
            "it could not be removed ({e}) and was emptied; the empty file is left at `{}`",
            path.display()
        )
    } else {
        format!(
            "it could not be removed ({e}): it is left at `{}`",
            path.display()
        )
    })
}

/// `stdout.txt`, `stderr.txt` (and a rollback's): the streams cut at `max_output_bytes`.
fn is_capped_stream(rel: &str) -> bool {
    rel.ends_with("stdout.txt") || rel.ends_with("stderr.txt")
}

/// A stream cut at the output cap may end inside a secret, where no rule
/// recognises what is left: drop its last partial word
/// ([`crate::redact::partial_word`]).
fn drop_partial_word(path: &Path, cap: u64) {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = crate::regular::open_rw(path) else {
        // Not a regular file: the sweep that follows withholds it.
        return;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    if cap == 0 || len < cap {
        return;
    }
    let from = len.saturating_sub(crate::redact::PARTIAL_WORD_MAX as u64);
    let mut tail = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err() || f.read_to_end(&mut tail).is_err() {
        return;
    }
    let word = crate::redact::partial_word(&tail);
    if word > 0 {
        let _ = f.set_len(len - word as u64);
    }
}

/// Scan one file (every byte of it) and, with `rewrite`, replace it with
/// its secrets redacted. What the rules found, offsets in the file. A file
/// that is gone is nothing to scan; one that cannot be read (a FIFO, a
/// socket, a device, no permission) or rewritten is an error, and with
/// `rewrite` it is withheld: removed from the output folder.
fn sweep_file(path: &Path, rewrite: bool) -> Result<Vec<crate::secrets::Finding>, SweepError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        // A path too long to name (a tree deeper than PATH_MAX), a folder
        // plangate may not search: not something to pass as swept.
        Err(e) => return Err(refused(path, rewrite, SweepError::io("look at", &e))),
    };
    if rewrite && crate::denied::is_denied(&meta) {
        // Another name of a file the permission rules deny reading: never read.
        let e = SweepError {
            special: false,
            gone: false,
            kept: false,
            why: crate::denied::WHY.to_owned(),
        };
        return Err(refused(path, rewrite, e));
    }
    let len = meta.len();
    if len == 0 && meta.file_type().is_file() {
        // An empty regular file holds nothing to scan or rewrite (most
        // capture files of a step): no open, no read. A link, FIFO, socket
        // or device is opened below and refused there.
        if rewrite {
            swept().insert(path.to_path_buf(), stamp_of(&meta));
        }
        return Ok(Vec::new());
    }
    let result = match scan_and_rewrite(path, len, rewrite) {
        Err(e) if e.gone && stamp(path).is_none() => Ok(Vec::new()),
        r => r,
    };
    match result {
        Err(e) => Err(refused(path, rewrite, e)),
        Ok(found) => {
            if rewrite && let Some(s) = stamp(path) {
                swept().insert(path.to_path_buf(), s);
            }
            Ok(found)
        }
    }
}

/// A file the sweep could not scan or rewrite: with `rewrite`, withheld
/// ([`withhold`]); `e` says so when it could not be.
fn refused(path: &Path, rewrite: bool, mut e: SweepError) -> SweepError {
    if rewrite && let Err(left) = withhold(path) {
        e.kept = true;
        e.why = format!("{}; {left}", e.why);
    }
    e
}

fn scan_and_rewrite(
    path: &Path,
    len: u64,
    rewrite: bool,
) -> Result<Vec<crate::secrets::Finding>, SweepError> {
    if len > PIECE && STOP.load(std::sync::atomic::Ordering::SeqCst) {
        // The run was interrupted: no long read starts now (the file is withheld).
        let e = std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "the run was interrupted before it was scanned",
        );
        return Err(SweepError::io("scan", &e));
    }
    if len > WHOLE_MAX {
        return sweep_in_pieces(path, rewrite).map_err(|e| SweepError::io("scan or rewrite", &e));
    }
    let read = crate::regular::read(path).map_err(|e| SweepError::io("read", &e))?;
    let (cleaned, found) = crate::redact::scrub(&read, rewrite);
    if rewrite && let std::borrow::Cow::Owned(c) = &cleaned {
        crate::atomic::write_bytes(path, crate::atomic::Mode::Keep, c)
            .map_err(|e| SweepError::io("rewrite", &e))?;
    }
    Ok(found)
}

/// Raw bytes of the piece before scanned again with the next one: a rule
/// that reads before a secret (`password = …`, up to 3 KiB) still sees
/// what the cut left behind.
const CONTEXT: usize = 16 * 1024;

/// Set when the run is interrupted (SIGINT/SIGTERM): a sweep stops between
/// two pieces of a large file and withholds it.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The run was interrupted: sweeps stop at the next piece ([`STOP`]).
pub(crate) fn stop_sweeps() {
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// [`sweep_file`] for a large file, in pieces of at most [`PIECE`] bytes,
/// written to a new file that replaces the old one when anything was
/// redacted. Each piece is cut after its last newline (in its second half),
/// moved back before a secret the cut would split
/// ([`crate::redact::safe_cut`], which reads [`crate::redact::CUT_LOOKAHEAD`]
/// bytes further), and scanned with the [`CONTEXT`] bytes before it. The
/// holes of a sparse file are not read (they read as zeros, which hold no
/// secret): one NUL stands for each in the context, as a view drops both,
/// and the new file keeps them as holes. An interrupted run ([`STOP`])
/// stops between two pieces: an error (the file is withheld).
fn sweep_in_pieces(path: &Path, rewrite: bool) -> std::io::Result<Vec<crate::secrets::Finding>> {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = crate::regular::open(path)?;
    let len = file.metadata()?.len();
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = if rewrite {
        Some(
            tempfile::Builder::new()
                .prefix(".plangate-redact-")
                .tempfile_in(dir)?,
        )
    } else {
        None
    };
    let window = PIECE as usize + crate::redact::CUT_LOOKAHEAD;
    let (mut found, mut changed, mut lines) = (Vec::new(), false, 0usize);
    // Raw bytes: the context (`..from`), then what is not written yet.
    let (mut buf, mut from, mut at) = (Vec::<u8>::new(), 0usize, 0u64);
    loop {
        if STOP.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "the run was interrupted before it was scanned",
            ));
        }
        let end = data_end(&file, at, len)?;
        file.seek(SeekFrom::Start(at))?;
        let want = window.saturating_sub(buf.len() - from) as u64;
        let n = (&mut file).take(want.min(end - at)).read_to_end(&mut buf)? as u64;
        at += n;
        // The file ended early (it shrank while read).
        let shrank = n == 0 && want > 0 && at < end;
        let boundary = at >= end || shrank;
        let pending = buf.get(from..).unwrap_or_default();
        if !boundary && pending.len() < window {
            continue;
        }
        let cut = if boundary {
            pending.len()
        } else {
            let half = PIECE as usize / 2;
            let nl = pending
                .get(half..PIECE as usize)
                .and_then(|p| memchr::memrchr(b'\n', p))
                .map_or(PIECE as usize, |i| half + i + 1);
            match crate::redact::safe_cut(pending, nl) {
                0 => nl,
                c => c,
            }
        };
        if cut > 0 {
            let piece = buf.get(..from + cut).unwrap_or_default();
            let (cleaned, mut hits) = crate::redact::scrub_from(piece, rewrite, from);
            let raw = piece.get(from..).unwrap_or_default();
            changed |= cleaned.as_slice() != raw;
            for h in &mut hits {
                h.line += lines;
            }
            found.extend(hits);
            lines += memchr::memchr_iter(b'\n', raw).count();
            if let Some(t) = tmp.as_mut() {
                t.write_all(&cleaned)?;
            }
            let keep = (from + cut).saturating_sub(CONTEXT);
            buf.drain(..keep);
            from = from + cut - keep;
        }
        if buf.len() > from {
            continue;
        }
        if at >= len || shrank {
            break;
        }
        if at >= end {
            // A hole: skipped, kept as one in the new file.
            let next = next_data(&file, at, len)?;
            if let Some(t) = tmp.as_mut() {
                t.seek(SeekFrom::Current(
                    i64::try_from(next - at).unwrap_or(i64::MAX),
                ))?;
            }
            buf.push(0);
            from = buf.len();
            file.seek(SeekFrom::Start(next))?;
            at = next;
            if at >= len {
                break;
            }
        }
    }
    if let (Some(t), true) = (tmp, changed) {
        let size = t.as_file().stream_position()?;
        t.as_file().set_len(size)?;
        let perms = std::fs::metadata(path)?.permissions();
        t.as_file().set_permissions(perms)?;
        t.persist(path).map_err(|e| e.error)?;
    }
    Ok(found)
}

/// Where the data from `at` ends: the next hole (`len` when none, or the
/// file system does not say).
fn data_end(file: &std::fs::File, at: u64, len: u64) -> std::io::Result<u64> {
    match rustix::fs::seek(file, rustix::fs::SeekFrom::Hole(at)) {
        Ok(h) => Ok(h.min(len)),
        Err(rustix::io::Errno::NXIO) => Ok(at),
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOTSUP) => Ok(len),
        Err(e) => Err(e.into()),
    }
}

/// Where the next data from `at` starts (`len` when only a hole is left).
fn next_data(file: &std::fs::File, at: u64, len: u64) -> std::io::Result<u64> {
    match rustix::fs::seek(file, rustix::fs::SeekFrom::Data(at)) {
        Ok(d) => Ok(d.min(len)),
        Err(rustix::io::Errno::NXIO) => Ok(len),
        Err(e) => Err(e.into()),
    }
}

/// A file or folder of the output folder renamed because its name held a
/// secret (or was no UTF-8): the step whose folder holds it (none: found by
/// the final sweep elsewhere) and its new path, relative to the output folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Renamed {
    pub(crate) step: Option<String>,
    pub(crate) path: String,
}

/// Renames not yet written to the audit log ([`take_renamed`]).
fn renamed() -> std::sync::MutexGuard<'static, Vec<Renamed>> {
    static R: OnceLock<Mutex<Vec<Renamed>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(Vec::new()))
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// The renames the sweeps made for `step` (`None`: all of them), taken out
/// of the list: the report writes each to the audit log once.
pub(crate) fn take_renamed(step: Option<&str>) -> Vec<Renamed> {
    let mut all = renamed();
    let (taken, kept) = std::mem::take(&mut *all)
        .into_iter()
        .partition(|r| step.is_none() || r.step.as_deref() == step);
    *all = kept;
    taken
}

/// The name `name` gets in the output folder: itself when nothing in it is
/// a secret, else the name passed through the redaction layer (every
/// secret, and every piece of a known one, replaced; as text, so a name
/// that is no UTF-8 gets one too). None when it may stay.
fn clean_name(name: &std::ffi::OsStr) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = name.as_bytes();
    // The names every step's folder holds (`stdout.txt`, ...) are cleaned
    // once per set of redaction values: the generation is read before
    // cleaning, so a value added meanwhile makes the entry stale.
    let generation = crate::redact::generation();
    if clean_names(generation, |known| known.contains(bytes)) {
        return None;
    }
    let cleaned = crate::redact::clean(bytes);
    if matches!(cleaned, std::borrow::Cow::Borrowed(_)) && name.to_str().is_some() {
        clean_names(generation, |known| known.insert(bytes.to_vec()));
        return None;
    }
    let text = String::from_utf8_lossy(&cleaned).replace(['/', '\0'], "_");
    Some(match text.as_str() {
        "" | "." | ".." => "[REDACTED]".to_owned(),
        _ => text,
    })
}

/// File names found clean ([`clean_name`]) under one redaction generation:
/// `f` runs on the set of the generation `generation` (emptied when the
/// generation changed). At most [`CLEAN_NAMES_MAX`] names are kept.
fn clean_names(generation: u64, f: impl FnOnce(&mut HashSet<Vec<u8>>) -> bool) -> bool {
    static NAMES: Mutex<(u64, Option<HashSet<Vec<u8>>>)> = Mutex::new((0, None));
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    let (seen, set) = &mut *names;
    if *seen != generation || set.as_ref().is_some_and(|s| s.len() >= CLEAN_NAMES_MAX) {
        *seen = generation;
        *set = None;
    }
    f(set.get_or_insert_with(HashSet::new))
}

/// Most names [`clean_names`] keeps.
const CLEAN_NAMES_MAX: usize = 4096;

/// Rename `dir/name` to its clean name ([`clean_name`]), next to it: a
/// number is added when that name is taken. The new name, or the old one
/// when it may stay; None when it is gone or could not be renamed: it is
/// then removed (a folder with what it holds), never left under its name.
/// An error (its location and why) when it could be neither renamed nor
/// removed.
fn rename_clean(
    dir: &Path,
    name: &std::ffi::OsStr,
    step: Option<&str>,
    rel: &str,
) -> Result<Option<String>, (String, String)> {
    let Some(clean) = clean_name(name) else {
        return Ok(name.to_str().map(str::to_owned));
    };
    let own = |n: &str| {
        let r = if rel.is_empty() {
            n.to_owned()
        } else {
            format!("{rel}/{n}")
        };
        r == "artifacts" || OWN_FILES.contains(&r.as_str())
    };
    if let Some(n) = name.to_str().filter(|n| own(n)) {
        // plangate's own files keep their names (they hold nothing a step chose).
        return Ok(Some(n.to_owned()));
    }
    let from = dir.join(name);
    if std::fs::symlink_metadata(&from).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        // Gone since the folder was listed (a write of plangate's renamed into place).
        return Ok(None);
    }
    let free = (0..1000u32)
        .map(|k| {
            if k == 0 {
                clean.clone()
            } else {
                format!("{clean}-{k}")
            }
        })
        .find(|n| std::fs::symlink_metadata(dir.join(n)).is_err());
    let moved = free.filter(|n| std::fs::rename(&from, dir.join(n)).is_ok());
    let Some(new) = moved else {
        // Not renamed: nothing named after a secret stays readable.
        let folder = if rel.is_empty() {
            "the output folder"
        } else {
            rel
        };
        if let Err(e) = super::withhold::remove(&from) {
            let location = if rel.is_empty() {
                clean
            } else {
                format!("{rel}/{clean}")
            };
            return Err((
                location,
                format!(
                    "its name held a secret and it could be neither renamed nor removed ({e}): it is left in `{}` under its name",
                    dir.display()
                ),
            ));
        }
        crate::output::warning(format_args!(
            "a file in `{folder}` whose name held a secret could not be renamed; it was removed"
        ));
        return Ok(None);
    };
    let path = if rel.is_empty() {
        new.clone()
    } else {
        format!("{rel}/{new}")
    };
    crate::output::warning(format_args!("`{path}` was renamed: its name held a secret"));
    renamed().push(Renamed {
        step: step.map(str::to_owned),
        path,
    });
    Ok(Some(new))
}

/// What [`unlisted_files`] found.
#[derive(Default)]
struct Walk {
    /// Files to sweep, relative to the output folder.
    files: Vec<String>,
    /// What could not be walked: its location, why, and whether it was
    /// withheld (removed; else `why` says what is left where).
    refused: Vec<(String, String, bool)>,
}

impl Walk {
    /// `path` (at `location`) could not be walked: withhold it, say why.
    fn refuse(&mut self, path: &Path, location: &str, why: String) {
        let location = if location.is_empty() {
            "the output folder".to_owned()
        } else {
            location.to_owned()
        };
        match super::withhold::remove(path) {
            Ok(()) => self.refused.push((location, why, true)),
            Err(e) => self.refused.push((
                location,
                format!(
                    "{why}; it could not be removed ({e}): it is left at `{}`",
                    path.display()
                ),
                false,
            )),
        }
    }
}

/// Files under `dir` (relative to the output folder as `rel`) that
/// `listed` does not name, special files included. Symbolic links found there are removed: what
/// they point at was never swept, and whoever reads the folder would follow them.
/// Files and folders whose name holds a secret (or is no UTF-8) are renamed
/// first ([`rename_clean`]), credited to `step` (or to the step whose
/// artifact folder holds them). A folder plangate's user may not list is
/// made listable first ([`super::withhold::make_owner_rwx`]); one it still
/// cannot list (a path longer than `PATH_MAX`, an I/O error) or an entry it
/// cannot look at is withheld: removed, and refused (never skipped).
fn unlisted_files(dir: &Path, rel: &str, listed: &[String], step: Option<&str>) -> Walk {
    let mut walk = Walk::default();
    let mut dirs = vec![(dir.to_path_buf(), rel.to_owned())];
    let top = dir.to_path_buf();
    while let Some((dir, rel)) = dirs.pop() {
        // Ignored: listing says what is wrong.
        let _ = super::withhold::make_owner_rwx(&dir);
        let listing = std::fs::read_dir(&dir).and_then(|l| l.collect::<Result<Vec<_>, _>>());
        // Listed first: a renamed entry is never met again under its new name.
        let entries = match listing {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) if dir == top && rel.is_empty() => {
                // The output folder itself: never removed (the report goes there).
                walk.refused.push((
                    "the output folder".to_owned(),
                    format!("cannot list it: {e}"),
                    false,
                ));
                continue;
            }
            Err(e) => {
                walk.refuse(&dir, &rel, format!("cannot list it: {e}"));
                continue;
            }
        };
        for e in entries {
            // plangate's own report being rewritten ([`crate::atomic`]).
            if crate::atomic::in_flight(&dir.join(e.file_name())) {
                continue;
            }
            let owner = step.map(str::to_owned).or_else(|| {
                rel.strip_prefix("artifacts/")
                    .and_then(|r| r.split('/').next())
                    .map(str::to_owned)
            });
            let name = match rename_clean(&dir, &e.file_name(), owner.as_deref(), &rel) {
                Ok(Some(name)) => name,
                Ok(None) => continue,
                Err((location, why)) => {
                    walk.refused.push((location, why, false));
                    continue;
                }
            };
            let path = dir.join(&name);
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let meta = match path.symlink_metadata() {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    // A name too long to reach by path: removed from its folder.
                    walk.refuse(&path, &r, format!("cannot look at it: {e}"));
                    continue;
                }
            };
            if meta.is_symlink() {
                if let Err(e) = super::withhold::remove(&path) {
                    walk.refused.push((
                        r,
                        format!(
                            "a symbolic link that could not be removed ({e}): it is left at `{}`",
                            path.display()
                        ),
                        false,
                    ));
                }
            } else if meta.is_dir() {
                dirs.push((path, r));
            } else if !listed.contains(&r) {
                // Regular files, and FIFOs, sockets and devices too: the
                // sweep refuses to read those and withholds them.
                walk.files.push(r);
            }
        }
    }
    walk
}

/// The last sweep, before the run ends: every file of the output folder
/// not swept since it last changed (plangate's own files aside), scanned and
/// rewritten; symbolic links removed. Findings of secrets not in `seen`,
/// credited to the step whose artifact folder holds them.
pub(crate) fn sweep_output_folder(
    out_dir: &Path,
    step_ids: &[String],
    seen: &HashSet<String>,
) -> Vec<Finding> {
    let mut findings: Vec<Finding> = Vec::new();
    let walk = unlisted_files(out_dir, "", &[], None);
    for (location, why, removed) in walk.refused {
        let step = location
            .strip_prefix("artifacts/")
            .and_then(|r| r.split('/').next())
            .filter(|id| step_ids.iter().any(|s| s == id))
            .map(str::to_owned);
        findings.push(unscannable_as(step, location, &why, removed));
    }
    for rel in walk.files {
        if OWN_FILES.contains(&rel.as_str()) {
            continue;
        }
        let path = out_dir.join(&rel);
        let done = swept().get(&path).copied();
        if done.is_some() && done == stamp(&path) {
            continue;
        }
        let step = rel
            .strip_prefix("artifacts/")
            .and_then(|r| r.split('/').next())
            .filter(|id| step_ids.iter().any(|s| s == id))
            .map(str::to_owned);
        let found = match sweep_file(&path, true) {
            Ok(found) => found,
            Err(e) if e.special && !e.kept => {
                special_removed(&rel, &e.why);
                continue;
            }
            Err(e) => {
                findings.push(unscannable_as(step, rel, &e.why, !e.kept));
                continue;
            }
        };
        for f in found {
            if seen.contains(&f.fingerprint)
                || findings.iter().any(|g| g.fingerprint == f.fingerprint)
            {
                continue;
            }
            findings.push(Finding {
                rule: f.rule,
                step: step.clone(),
                location: rel.clone(),
                line: f.line as u64,
                fingerprint: f.fingerprint,
            });
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty regular file is swept without being opened (and stamped for
    /// the last sweep); an empty FIFO or a link is not taken for one.
    #[test]
    fn an_empty_file_is_nothing_to_scan_but_an_empty_fifo_is_still_refused() {
        let d = tempfile::tempdir().unwrap();
        let empty = d.path().join("stdout.txt");
        std::fs::write(&empty, b"").unwrap();
        assert!(sweep_file(&empty, true).is_ok_and(|f| f.is_empty()));
        assert_eq!(swept().get(&empty).copied(), stamp(&empty));
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(sweep_file(&fifo, true).is_err_and(|e| e.special));
        // A link to an empty file is not an empty file: it goes the long way.
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&empty, &link).unwrap();
        assert!(sweep_file(&link, true).is_ok());
        let kept = swept().get(&link).copied();
        assert!(kept.is_some_and(|(len, _)| len > 0), "{kept:?}");
        assert_eq!(kept, stamp(&link));
    }

    /// A name found clean is cleaned again once the redaction's values
    /// grew: a name that became a secret's is renamed.
    #[test]
    fn a_name_found_clean_is_judged_again_when_a_secret_is_added() {
        let name = std::ffi::OsStr::new("zq7Hv2pL9xW4mK8rT3nB.txt");
        assert_eq!(clean_name(name), None);
        assert_eq!(clean_name(name), None, "from the cache");
        crate::redact::remember(vec![b"zq7Hv2pL9xW4mK8rT3nB".to_vec()]);
        let renamed = clean_name(name).expect("renamed once the value is a secret");
        assert!(!renamed.contains("zq7Hv2pL9xW4mK8rT3nB"), "{renamed}");
    }

    /// The report rewritten while the last sweep runs: its temporary file
    /// is neither read, renamed, withheld nor called unscannable, and the
    /// rename that follows lands.
    #[test]
    fn the_last_sweep_leaves_a_report_being_written_alone() {
        let out = tempfile::tempdir().unwrap();
        let step = out.path().join("artifacts/s");
        std::fs::create_dir_all(&step).unwrap();
        std::fs::write(step.join("note.txt"), "nothing\n").unwrap();
        let report = out.path().join("report.json");
        let mut during = None;
        // Content a sweep would rewrite, were it a step's file.
        let planted = b"AKIAZ7Q4NX2LMRBT5KPW\n";
        crate::atomic::write(&report, crate::atomic::Mode::Set(0o644), false, |w| {
            w.write_all(planted)?;
            w.flush()?;
            during = Some(sweep_output_folder(
                out.path(),
                &["s".to_owned()],
                &HashSet::new(),
            ));
            let temps: Vec<_> = std::fs::read_dir(out.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .filter(|n| n.to_string_lossy().starts_with(".plangate-tmp-"))
                .collect();
            assert_eq!(temps.len(), 1, "the temporary file was moved: {temps:?}");
            Ok(())
        })
        .unwrap();
        let findings = during.unwrap();
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(std::fs::read(&report).unwrap(), planted);
        // A file a step left there is still swept.
        std::fs::write(out.path().join("stray.txt"), "x\n").unwrap();
        std::fs::set_permissions(
            out.path().join("stray.txt"),
            std::os::unix::fs::PermissionsExt::from_mode(0o000),
        )
        .unwrap();
        let root = rustix::process::geteuid().is_root();
        let found = sweep_output_folder(out.path(), &["s".to_owned()], &HashSet::new());
        assert_eq!(
            found.iter().filter(|f| is_unscannable(f)).count(),
            usize::from(!root)
        );
    }
}
