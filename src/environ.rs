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

/// What [`seal`] could not do.
#[derive(Debug, Default)]
pub(crate) struct Sealed {
    /// Each part of the sealed boundary that could not be done, with the
    /// reason (the command-line mask only when a credential flag is given).
    /// Each leaves a property plangate promises unenforced: `run` and
    /// `draft` refuse to start anything ([`Sealed::refusal`]).
    pub failed: Vec<String>,
}

impl Sealed {
    /// Why plangate must not run steps or publish: every part that failed,
    /// in one message. None: the boundary is whole.
    pub(crate) fn refusal(&self) -> Option<String> {
        if self.failed.is_empty() {
            return None;
        }
        Some(format!(
            "plangate cannot seal itself off from the steps it would run, so it runs nothing and publishes nothing: {}",
            self.failed.join("; ")
        ))
    }
}

/// What a refusal asks the user to do.
pub(crate) const REFUSAL_HELP: &str = "pass tokens in the environment (PLANGATE_GITHUB_TOKEN, GITLAB_TOKEN) rather than as flags, and run plangate where /proc is mounted and writable by the process itself (/proc/self/mem) and prctl is allowed";

/// Whether the command line holds the value of a credential flag.
fn credential_flag_given() -> bool {
    use std::os::unix::ffi::OsStrExt;
    let mut block = Vec::new();
    for a in std::env::args_os() {
        block.extend_from_slice(a.as_bytes());
        block.push(0);
    }
    !secret_spans(&block).is_empty()
}

/// Debug builds only, for the tests: `PLANGATE_TEST_SEAL_FAIL` (a comma list
/// of `environ`, `cmdline`, `dumpable`, `subreaper`) makes those parts of
/// [`seal`] fail as if the kernel refused. It can only make plangate refuse
/// to run; a release build does not read it. Not a user setting.
fn forced(vars: &BTreeMap<OsString, OsString>, part: &str) -> std::io::Result<()> {
    if cfg!(debug_assertions)
        && vars
            .get(OsStr::new("PLANGATE_TEST_SEAL_FAIL"))
            .and_then(|v| v.to_str())
            .is_some_and(|v| v.split(',').any(|p| p.trim() == part))
    {
        return Err(std::io::Error::other(
            "forced by PLANGATE_TEST_SEAL_FAIL (a test build)",
        ));
    }
    Ok(())
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
    let force = |part: &str| forced(&vars, part);
    let (f_environ, f_cmdline, f_dumpable, f_subreaper) = (
        force("environ"),
        force("cmdline"),
        force("dumpable"),
        force("subreaper"),
    );
    let _ = SEALED.set(vars);
    // Before any step runs: a step may later write a `git` into a folder on PATH.
    let _ = git();
    if let Err(e) = f_environ.and_then(|()| wipe_environ_block()) {
        out.failed.push(format!(
            "cannot wipe its environment (CI tokens among it) from /proc/self/environ: {e}"
        ));
    }
    // Nothing to mask: nothing to fail.
    if let Err(e) = f_cmdline.and_then(|()| mask_secret_arguments())
        && credential_flag_given()
    {
        out.failed.push(format!(
            "cannot mask the value of a credential flag (`--*-token`, `--*-key`, `--*-secret`, `--*-password`) in /proc/self/cmdline, which every process on the machine can read: {e}"
        ));
    }
    if let Err(e) = f_dumpable.and_then(|()| {
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
            .map_err(std::io::Error::from)
    }) {
        out.failed.push(format!(
            "cannot make itself non-dumpable (a step could read its memory and /proc files): {e}"
        ));
    }
    // A descriptor plangate inherited (`plangate run ... 9>file`) must reach no step.
    close_fds::set_fds_cloexec(3, &[]);
    if let Err(e) = f_subreaper.and_then(|()| {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
            .map_err(std::io::Error::from)
    }) {
        out.failed.push(format!(
            "cannot become a child subreaper (a process a step orphans would escape the end-of-run kill): {e}"
        ));
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
    fn any_part_that_failed_is_a_refusal_naming_every_part() {
        assert!(super::Sealed::default().refusal().is_none());
        let s = super::Sealed {
            failed: vec!["cannot a: x".into(), "cannot b: y".into()],
        };
        let why = s.refusal().unwrap_or_default();
        assert!(why.contains("runs nothing and publishes nothing"), "{why}");
        assert!(why.contains("cannot a: x; cannot b: y"), "{why}");
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
