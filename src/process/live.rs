//! Process groups a run has alive, on disk, so that a run killed outright
//! (SIGKILL, OOM killer, a cancelled CI job) does not leave its steps running
//! forever: the next `plangate run` on the machine stops them.
//!
//! While a step runs, its process group id is listed in
//! `$TMPDIR/plangate-live-<uid>/<run_id>.json` next to plangate's own pid
//! and start time. At start, every file whose plangate is gone is reaped:
//! each listed group that still exists is killed only after checking that its
//! leader really is that run's step (its environment holds
//! `PLANGATE_RUN_ID=<run_id>`), so a reused pid is never touched.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rustix::process::{Pid, Signal, kill_process_group};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    run_id: String,
    pid: i32,
    /// Field 22 of `/proc/<pid>/stat`: tells a live plangate from a reused pid.
    start_time: Option<u64>,
    groups: BTreeSet<i32>,
}

struct Registry {
    path: PathBuf,
    record: Mutex<Record>,
    /// The file once written, and the length of the longest text written
    /// to it (taken with `record` held).
    file: Mutex<Option<(std::fs::File, usize)>>,
}

/// Longest text rewritten in place: one write within the file's first
/// page, which a kill cannot cut in the middle (the kernel stops a write
/// for a fatal signal only between pages). Longer: temp file and rename.
const IN_PLACE_MAX: usize = 4000;

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// The directory of live-run files.
fn dir() -> PathBuf {
    let uid = rustix::process::getuid().as_raw();
    crate::environ::temp_dir().join(format!("plangate-live-{uid}"))
}

fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Start recording this run's groups. Call once, before any step starts.
pub(crate) fn start(run_id: &str) {
    let pid = i32::try_from(std::process::id()).unwrap_or(0);
    let d = dir();
    if std::fs::create_dir_all(&d).is_err() {
        return;
    }
    let _ = REGISTRY.set(Registry {
        path: d.join(format!("{run_id}.json")),
        record: Mutex::new(Record {
            run_id: run_id.to_owned(),
            pid,
            start_time: start_time(pid),
            groups: BTreeSet::new(),
        }),
        file: Mutex::new(None),
    });
}

fn save(reg: &Registry, rec: &Record) {
    let Ok(mut text) = serde_json::to_vec(rec) else {
        return;
    };
    let Ok(mut file) = reg.file.lock() else {
        return;
    };
    // Once the file exists, it is rewritten in place (no new inode a step):
    // one write at its start, padded with spaces to the longest text
    // written before, so no tail of an older text is left after it (JSON
    // allows trailing spaces). A reader never sees half of it: the file is
    // only read once its plangate is dead, and a kill does not cut the write.
    if let Some((f, longest)) = file.as_mut()
        && text.len().max(*longest) <= IN_PLACE_MAX
    {
        use std::os::unix::fs::FileExt as _;
        if text.len() < *longest {
            text.resize(*longest, b' ');
        }
        if f.write_all_at(&text, 0).is_ok() {
            *longest = text.len();
            return;
        }
    }
    let write = || -> std::io::Result<std::fs::File> {
        let mut tmp = tempfile::NamedTempFile::new_in(reg.path.parent().unwrap_or(Path::new(".")))?;
        std::io::Write::write_all(&mut tmp, &text)?;
        tmp.persist(&reg.path).map_err(|e| e.error)
    };
    *file = write().ok().map(|f| (f, text.len()));
}

/// A step's process group started.
pub(crate) fn add(pgid: Pid) {
    if let Some(reg) = REGISTRY.get()
        && let Ok(mut rec) = reg.record.lock()
    {
        rec.groups.insert(pgid.as_raw_nonzero().get());
        save(reg, &rec);
    }
}

/// A step's process group is gone. Dropped from the record without
/// rewriting the file (one file write a step, not two): the next [`add`]
/// writes the set without it, and a group left listed is harmless, since
/// [`reap_orphans`] kills only a group whose leader's environment names
/// this run.
pub(crate) fn remove(pgid: Pid) {
    if let Some(reg) = REGISTRY.get()
        && let Ok(mut rec) = reg.record.lock()
    {
        rec.groups.remove(&pgid.as_raw_nonzero().get());
    }
}

/// The run ended normally: its file goes.
pub(crate) fn finish() {
    if let Some(reg) = REGISTRY.get() {
        let _ = std::fs::remove_file(&reg.path);
    }
}

/// Stop the steps of runs whose plangate died without stopping them.
/// Returns one line per reaped run, for the console and the audit log.
pub(crate) fn reap_orphans() -> Vec<String> {
    let mut said = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir()) else {
        return said;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(rec) = serde_json::from_str::<Record>(&text) else {
            // A half-written file of a live run is replaced atomically; a broken one is stale.
            continue;
        };
        let alive = rec.start_time.is_some() && start_time(rec.pid) == rec.start_time;
        if alive {
            continue;
        }
        let marker = format!("PLANGATE_RUN_ID={}", rec.run_id);
        let mut killed = 0;
        for g in &rec.groups {
            let Some(pg) = Pid::from_raw(*g) else {
                continue;
            };
            if leader_belongs_to(*g, &marker) && kill_process_group(pg, Signal::KILL).is_ok() {
                killed += 1;
            }
        }
        let _ = std::fs::remove_file(&path);
        if killed > 0 {
            said.push(format!(
                "stopped {killed} process group(s) left running by run {} (its plangate was killed)",
                rec.run_id
            ));
        }
    }
    said
}

/// Whether the process `pid` (a group leader) carries `marker` in its environment.
fn leader_belongs_to(pid: i32, marker: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()))
}
