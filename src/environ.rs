//! plangate's own environment, kept in memory and out of reach of the steps.
//!
//! `plangate run` calls [`seal`] before it starts anything: the environment
//! (CI tokens included) is copied into memory, then the block the kernel
//! shows in `/proc/<pid>/environ` is overwritten with zeros (through
//! `/proc/self/mem`: no unsafe code), the value of every credential flag
//! (`--github-token=…`) in the argument block `/proc/<pid>/cmdline` shows to
//! every process is overwritten with `*`, the process is made non-dumpable (a
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
static GIT: OnceLock<Option<PathBuf>> = OnceLock::new();

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
    // Before any step runs: a step may later write a `git` into a folder on PATH.
    let _ = git();
    if let Err(e) = wipe_environ_block() {
        out.failed
            .push(format!("cannot wipe /proc/self/environ: {e}"));
    }
    if let Err(e) = mask_secret_arguments() {
        out.failed.push(format!(
            "cannot mask token values in /proc/self/cmdline: {e}"
        ));
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

/// Fields `a` and `b` of `/proc/self/stat` (numbered from 1, as in proc(5)).
fn stat_fields(a: usize, b: usize) -> std::io::Result<(u64, u64)> {
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
    Ok((field(a)?, field(b)?))
}

/// Whether a long option's value is a credential (`--github-token`,
/// `--gitlab-token`, any `--*-token`, `--*-key`, `--*-secret`, `--*-password`).
fn is_secret_flag(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["token", "key", "secret", "password"]
        .iter()
        .any(|w| name == *w || name.ends_with(&format!("-{w}")))
}

/// Where the credential values sit in an argument block (`arg\0arg\0...`):
/// `(offset, length)` of each value of a flag [`is_secret_flag`] names, in
/// both spellings (`--flag VALUE` and `--flag=VALUE`). Nothing after `--`.
fn secret_spans(block: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut offset = 0;
    let mut value_next = false;
    for arg in block.split(|b| *b == 0) {
        let len = arg.len();
        if value_next {
            spans.push((offset, len));
            value_next = false;
        } else if arg == b"--" {
            break;
        } else if let Some(flag) = arg.strip_prefix(b"--") {
            let text = String::from_utf8_lossy(flag);
            match text.split_once('=') {
                Some((name, _)) if is_secret_flag(name) => {
                    let start = name.len() + 3;
                    spans.push((offset + start, len - start));
                }
                None => value_next = is_secret_flag(&text),
                Some(_) => {}
            }
        }
        offset += len + 1;
    }
    spans.retain(|(_, l)| *l > 0);
    spans
}

/// Overwrite, in the argument block `/proc/<pid>/cmdline` shows to every
/// process on the machine (dumpable or not), the value of each credential
/// flag with `*` of the same length (the token is already in clap's copy).
fn mask_secret_arguments() -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let (start, end) = stat_fields(48, 49)?;
    if end <= start || end - start > 64 * 1024 * 1024 {
        return Err(std::io::Error::other("implausible argument block"));
    }
    let block = std::fs::read("/proc/self/cmdline")?;
    let spans = secret_spans(&block);
    if spans.is_empty() {
        return Ok(());
    }
    let mem = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/mem")?;
    for (at, len) in spans {
        mem.write_all_at(&vec![b'*'; len], start + at as u64)?;
    }
    Ok(())
}

/// Overwrite the strings between `env_start` and `env_end` (fields 50 and 51
/// of `/proc/self/stat`) with zeros. libc's `environ` points into that block,
/// so afterwards `std::env` finds nothing either: everything reads [`var`].
fn wipe_environ_block() -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let (start, end) = stat_fields(50, 51)?;
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

/// The `git` plangate runs (its diff, its push, the git tool), found once on
/// `PATH` when the run starts, before any step could plant one in a folder on
/// `PATH` it may write: the first executable `git` in an absolute folder that
/// is not the working directory, the CI workspace or below them. None found:
/// plain `git` (the spawn then fails and says so).
pub(crate) fn git() -> PathBuf {
    GIT.get_or_init(|| find_git(var_os("PATH")))
        .clone()
        .unwrap_or_else(|| PathBuf::from("git"))
}

fn find_git(path: Option<OsString>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let untrusted: Vec<PathBuf> = [
        std::env::current_dir().ok(),
        var_os("GITHUB_WORKSPACE").map(PathBuf::from),
        var_os("CI_PROJECT_DIR").map(PathBuf::from),
    ]
    .into_iter()
    .flatten()
    .filter_map(|p| p.canonicalize().ok())
    .collect();
    std::env::split_paths(&path?)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("git"))
        .find(|p| {
            let real = p.canonicalize().ok();
            let exec = std::fs::metadata(p)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
            exec && real.is_some_and(|r| !untrusted.iter().any(|u| r.starts_with(u)))
        })
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

#[cfg(test)]
mod tests {
    use super::{is_secret_flag, secret_spans};

    fn masked(args: &[&str]) -> String {
        let mut block = args.join("\0").into_bytes();
        block.push(0);
        for (at, len) in secret_spans(&block) {
            block[at..at + len].fill(b'*');
        }
        String::from_utf8_lossy(&block).replace('\0', " ")
    }

    #[test]
    fn credential_flags_are_named_by_their_last_word() {
        for f in [
            "github-token",
            "gitlab-token",
            "token",
            "api-key",
            "x-secret",
            "db-password",
        ] {
            assert!(is_secret_flag(f), "{f}");
        }
        for f in [
            "tokenizer",
            "keep-going",
            "secrets-rules",
            "fail-on-secrets",
            "key-file-path",
        ] {
            assert!(!is_secret_flag(f), "{f}");
        }
    }

    #[test]
    fn token_values_are_masked_in_both_spellings_and_nothing_else() {
        assert_eq!(
            masked(&[
                "plangate",
                "run",
                "p.yaml",
                "--github-token",
                "ghp_abc",
                "--out",
                "o"
            ]),
            "plangate run p.yaml --github-token ******* --out o "
        );
        assert_eq!(
            masked(&["plangate", "run", "--gitlab-token=glpat-x1", "p.yaml"]),
            "plangate run --gitlab-token=******** p.yaml "
        );
        // After `--` nothing is a flag; an empty value has nothing to mask.
        assert_eq!(
            masked(&["plangate", "--", "--github-token", "v", "--github-token="]),
            "plangate -- --github-token v --github-token= "
        );
        assert_eq!(
            masked(&["plangate", "--github-token"]),
            "plangate --github-token "
        );
    }
}
