//! plangate's own environment, kept in memory and out of reach of the steps.
//!
//! `plangate run` calls [`seal`] before it starts anything: the environment
//! (CI tokens included) is copied into memory, then the block the kernel
//! shows in `/proc/<pid>/environ` is overwritten with zeros (through
//! `/proc/self/mem`: no unsafe code), the process is made non-dumpable (a
//! process of the same user can no longer read its `/proc` files or attach to
//! it), every file descriptor it inherited beyond stdin, stdout and stderr is
//! marked close-on-exec (no child gets one), and it becomes a child subreaper
//! (a process a step orphans comes back to plangate, not to init).
//!
//! Every part of plangate reads the environment through this module: before
//! `seal` (other subcommands) it is the live one, after it the copy.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::OnceLock;

static SEALED: OnceLock<BTreeMap<OsString, OsString>> = OnceLock::new();
static PROXY: OnceLock<Option<ureq::Proxy>> = OnceLock::new();

/// What [`seal`] managed to do (each part that failed is named; the run goes on).
#[derive(Debug, Default)]
pub(crate) struct Sealed {
    /// Parts that could not be done, with the reason.
    pub failed: Vec<String>,
}

/// Copy the environment into memory, then wipe it where other processes could read it.
/// Call once, before any thread or child process is started.
pub(crate) fn seal() -> Sealed {
    let mut out = Sealed::default();
    let vars: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    // Read now what libraries would otherwise read from the environment later.
    let _ = PROXY.set(ureq::Proxy::try_from_env());
    #[allow(clippy::disallowed_methods)] // asks what stderr is; writes nothing
    let color = anstream::AutoStream::choice(&std::io::stderr());
    color.write_global();
    if let Some(tmp) = vars.get(OsStr::new("TMPDIR")).map(PathBuf::from)
        && tmp.is_absolute()
    {
        let _ = tempfile::env::override_temp_dir(&tmp);
    }
    let _ = SEALED.set(vars);
    if let Err(e) = wipe_environ_block() {
        out.failed
            .push(format!("cannot wipe /proc/self/environ: {e}"));
    }
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        out.failed
            .push(format!("cannot make plangate non-dumpable: {e}"));
    }
    // A descriptor plangate inherited (`plangate run ... 9>file`) must reach no step.
    close_fds::set_fds_cloexec(3, &[]);
    if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        out.failed
            .push(format!("cannot make plangate a child subreaper: {e}"));
    }
    out
}

/// Overwrite the strings between `env_start` and `env_end` (fields 50 and 51
/// of `/proc/self/stat`) with zeros. libc's `environ` points into that block,
/// so afterwards `std::env` finds nothing either: everything reads [`var`].
fn wipe_environ_block() -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let rest = stat
        .rfind(')')
        .map(|i| &stat[i + 1..])
        .ok_or_else(|| std::io::Error::other("unreadable /proc/self/stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3.
    let field = |n: usize| -> std::io::Result<u64> {
        fields
            .get(n - 3)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("no field {n} in /proc/self/stat")))
    };
    let (start, end) = (field(50)?, field(51)?);
    if end <= start || end - start > 64 * 1024 * 1024 {
        return Err(std::io::Error::other("implausible environment block"));
    }
    let len = usize::try_from(end - start).map_err(std::io::Error::other)?;
    let mem = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/mem")?;
    mem.write_all_at(&vec![0u8; len], start)?;
    Ok(())
}

/// A variable of plangate's environment.
pub(crate) fn var_os(key: &str) -> Option<OsString> {
    match SEALED.get() {
        Some(m) => m.get(OsStr::new(key)).cloned(),
        None => std::env::var_os(key),
    }
}

/// A variable of plangate's environment, when it is UTF-8.
pub(crate) fn var(key: &str) -> Option<String> {
    var_os(key).and_then(|v| v.into_string().ok())
}

/// Every variable of plangate's environment.
pub(crate) fn vars_os() -> std::vec::IntoIter<(OsString, OsString)> {
    match SEALED.get() {
        Some(m) => m
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
            .into_iter(),
        None => std::env::vars_os().collect::<Vec<_>>().into_iter(),
    }
}

/// The temporary folder (`TMPDIR` when absolute, else `/tmp`).
pub(crate) fn temp_dir() -> PathBuf {
    var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(std::env::temp_dir)
}

/// The proxy the environment named (`ALL_PROXY`, `HTTPS_PROXY`, … with
/// `NO_PROXY`), read before the environment was sealed.
pub(crate) fn proxy() -> Option<ureq::Proxy> {
    match PROXY.get() {
        Some(p) => p.clone(),
        None => ureq::Proxy::try_from_env(),
    }
}
