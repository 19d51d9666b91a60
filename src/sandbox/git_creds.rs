//! Credentials a checkout left in the workspace's git configuration
//! (`actions/checkout` persists `http.https://github.com/.extraheader:
//! AUTHORIZATION: basic ...`), withheld from every step for the run.
//!
//! Before any step runs, [`withhold`] reads `.git/config` (and the files it
//! includes from inside the workspace) with `git config --list`, finds the
//! entries that carry a credential ([`is_credential`]: `http.*.extraheader`,
//! every `credential.*` entry, `url.<base>.insteadOf` whose base holds a
//! user or password, a remote URL that holds one), and rewrites the file
//! without them (a remote URL loses only its user and password). A second
//! `git config --list` of the result must find none left, or the run is
//! refused (fail-close). Steps, rollbacks and agents (whose staged copy is
//! made from the rewritten file) never see them; plangate's own git tool
//! gets the extra headers and credential-bearing URLs back through
//! command-scope configuration (`GIT_CONFIG_COUNT`, never argv) for a push
//! or pull ([`Supply::config`]). Credential helpers are not given back:
//! plangate's git runs none.
//!
//! Restoring is crash-safe: the original bytes are written first to a
//! private backup (mode 0600, in the system's temporary folder, which no
//! sandboxed step can read) and put back when the run ends (also on SIGINT
//! and SIGTERM, which stop the run in order). A run that was killed outright
//! leaves the backup; the next run on the workspace puts it back before it
//! starts. When a step approved as dangerous changed the file meanwhile, the
//! withheld entries are appended to the changed file rather than the old
//! bytes written over it.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

/// What the git tool gets back and what the report says.
#[derive(Clone, Default)]
pub(crate) struct Supply {
    /// Command-scope configuration for plangate's git push or pull.
    config: Vec<(String, String)>,
    /// Command-scope configuration for every call of plangate's git (the
    /// includes of files outside the workspace).
    always: Vec<(String, String)>,
    /// One line per withheld entry (keys only, users and passwords masked).
    pub(crate) withheld: Vec<String>,
}

impl std::fmt::Debug for Supply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supply")
            .field(
                "config",
                &format_args!("{} entries (withheld)", self.config.len()),
            )
            .field("withheld", &self.withheld)
            .finish()
    }
}

impl Supply {
    /// `(key, value)` pairs for `GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`:
    /// with `network` (a push or pull) the credentials too.
    pub(crate) fn config(&self, network: bool) -> Vec<(String, String)> {
        let mut c = self.always.clone();
        if network {
            c.extend(self.config.iter().cloned());
        }
        c
    }
}

/// One configuration file rewritten without its credentials.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Rewritten {
    path: PathBuf,
    original: Vec<u8>,
    sanitized: Vec<u8>,
    /// `(key, value)` removed (keys as `git config --list` prints them).
    removed: Vec<(String, String)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Backup {
    pid: u32,
    files: Vec<Rewritten>,
}

/// The credentials withheld for a run; put back on [`Withheld::restore`] or drop.
#[derive(Debug)]
pub(crate) struct Withheld {
    backup: Option<PathBuf>,
    files: Vec<Rewritten>,
    /// For the git tool and the report.
    pub(crate) supply: Supply,
    /// What a run killed earlier left withheld and this one put back.
    pub(crate) recovered: Vec<String>,
}

/// Whether a `git config --list` entry carries a credential.
pub(crate) fn is_credential(key: &str, value: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let (section, name) = match (k.split_once('.'), k.rsplit_once('.')) {
        (Some((s, _)), Some((_, n))) => (s, n),
        _ => return false,
    };
    // A user or password in the key itself (`url.https://u:p@host/.insteadOf`,
    // `http.https://u:p@host/.sslVerify`).
    if subsection(key).is_some_and(has_userinfo) {
        return true;
    }
    match (section, name) {
        ("http", "extraheader") | ("credential", _) => true,
        ("remote", "url" | "pushurl") => has_userinfo(value),
        _ => false,
    }
}

/// The subsection of `section.sub.name` (case kept), if any.
fn subsection(key: &str) -> Option<&str> {
    let first = key.find('.')?;
    let last = key.rfind('.')?;
    (last > first).then(|| &key[first + 1..last])
}

/// Whether a URL holds a user or password (`https://user:pw@host/...`).
fn has_userinfo(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.contains('@')
}

/// `url` without its user and password.
fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{host}{tail}")
}

/// A key for people: users and passwords in it masked.
fn shown(key: &str) -> String {
    match subsection(key) {
        Some(sub) if has_userinfo(sub) => {
            let (scheme, rest) = sub.split_once("://").unwrap_or(("", sub));
            let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
            key.replace(sub, &format!("{scheme}://***@{host}"))
        }
        _ => key.to_owned(),
    }
}

/// Where the backup for `workspace` lives.
fn backup_path(workspace: &Path) -> PathBuf {
    use sha2::{Digest, Sha256};
    let h = hex::encode(Sha256::digest(workspace.as_os_str().as_encoded_bytes()));
    crate::environ::temp_dir().join(format!("plangate-git-credentials-{}", &h[..16]))
}

/// `git config --file PATH --null --list`: the entries, or None when git
/// cannot be run.
fn list(path: &Path) -> Result<Option<Vec<(String, String)>>, String> {
    // From `/`: git must not look for a repository around the current folder
    // (one it distrusts, "dubious ownership", would make it refuse).
    let out = match Command::new(crate::environ::git())
        .args(["config", "--null", "--list", "--file"])
        .arg(path)
        .current_dir("/")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot run git to read {}: {e}", path.display())),
    };
    if !out.status.success() {
        return Err(format!(
            "git cannot read {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(Some(
        out.stdout
            .split(|b| *b == 0)
            .filter(|r| !r.is_empty())
            .map(|r| {
                let r = String::from_utf8_lossy(r);
                let (k, v) = r.split_once('\n').unwrap_or((&r, ""));
                (k.to_owned(), v.to_owned())
            })
            .collect(),
    ))
}

/// Text that may hold a credential, for when git cannot be run to read it.
fn looks_sensitive(bytes: &[u8]) -> bool {
    let t = String::from_utf8_lossy(bytes).to_ascii_lowercase();
    t.contains("extraheader")
        || t.contains("[credential")
        || t.contains("credential.")
        || (t.contains("://") && t.contains('@'))
}

/// A section header's (section, subsection) from its line, lowercased section.
fn header(line: &str) -> Option<(String, Option<String>, &str)> {
    let t = line.trim_start();
    let rest = t.strip_prefix('[')?;
    let close = rest.find(']')?;
    let inside = &rest[..close];
    let after = &rest[close + 1..];
    if let Some((sec, sub)) = inside.split_once(char::is_whitespace) {
        let sub = sub.trim();
        let sub = sub.strip_prefix('"')?.strip_suffix('"')?;
        let sub = sub.replace("\\\"", "\"").replace("\\\\", "\\");
        Some((sec.to_ascii_lowercase(), Some(sub), after))
    } else if let Some((sec, sub)) = inside.split_once('.') {
        // `[section.sub]` (deprecated): the subsection is lowercased by git.
        Some((
            sec.to_ascii_lowercase(),
            Some(sub.to_ascii_lowercase()),
            after,
        ))
    } else {
        Some((inside.to_ascii_lowercase(), None, after))
    }
}

/// A variable line's name (lowercased), if it is one.
fn var_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    if t.is_empty() || t.starts_with('#') || t.starts_with(';') || t.starts_with('[') {
        return None;
    }
    let end = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(t.len());
    (end > 0).then(|| t[..end].to_ascii_lowercase())
}

/// Whether a line continues on the next (ends in an unescaped backslash).
fn continues(line: &str) -> bool {
    let trailing = line.bytes().rev().take_while(|b| *b == b'\\').count();
    trailing % 2 == 1
}

/// `bytes` without the variables that carry a credential (per `drop`, which
/// gets the full key and the line), remote URLs with userinfo rewritten.
/// Err when a credential sits on a section header's line (not handled: refused).
fn strip(bytes: &[u8], outside: &[(String, String)]) -> Result<Vec<u8>, String> {
    let is_outside = |key: &str| outside.iter().any(|(k, _)| k.eq_ignore_ascii_case(key));
    let text =
        String::from_utf8(bytes.to_vec()).map_err(|_| "the file is not UTF-8 text".to_owned())?;
    let mut out = String::with_capacity(text.len());
    let mut section: Option<(String, Option<String>)> = None;
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        if skipping {
            skipping = continues(line.trim_end_matches(['\n', '\r']));
            continue;
        }
        if let Some((sec, sub, after)) = header(line) {
            // A header that names a user or password goes, with its variables
            // (each of them is then a credential too).
            let named = sub.as_deref().is_some_and(has_userinfo);
            section = Some((sec, sub));
            if named {
                if !after.trim().is_empty() && !after.trim_start().starts_with(['#', ';']) {
                    return Err("a section naming a user or password has a variable on its header line; move it to a line of its own".to_owned());
                }
                continue;
            }
            if !after.trim().is_empty() && !after.trim_start().starts_with(['#', ';']) {
                // A variable on the header's line.
                let (sec, sub) = section
                    .as_ref()
                    .map(|(a, b)| (a.clone(), b.clone()))
                    .unwrap_or_default();
                if let Some(name) = var_name(after) {
                    let key = full_key(&sec, sub.as_deref(), &name);
                    if drops(&key, value_of(after)) || is_outside(&key) {
                        return Err(format!(
                            "`{}` is written on its section's header line; move it to a line of its own",
                            shown(&key)
                        ));
                    }
                }
            }
            out.push_str(line);
            continue;
        }
        if let (Some((sec, sub)), Some(name)) = (&section, var_name(line)) {
            let key = full_key(sec, sub.as_deref(), &name);
            let value = value_of(line);
            if drops(&key, value) || is_outside(&key) {
                if sec == "remote"
                    && (name == "url" || name == "pushurl")
                    && !continues(line.trim_end_matches(['\n', '\r']))
                {
                    let v = value.trim().trim_matches('"');
                    out.push_str(&format!("\t{name} = {}\n", quote(&without_userinfo(v))));
                }
                skipping = continues(line.trim_end_matches(['\n', '\r']));
                continue;
            }
        }
        out.push_str(line);
    }
    Ok(out.into_bytes())
}

fn full_key(sec: &str, sub: Option<&str>, name: &str) -> String {
    match sub {
        Some(s) => format!("{sec}.{s}.{name}"),
        None => format!("{sec}.{name}"),
    }
}

/// The raw value after `=` on a variable line (comments not stripped: only
/// used to look for userinfo, erring towards dropping).
fn value_of(line: &str) -> &str {
    line.split_once('=')
        .map_or("", |(_, v)| v.trim_end_matches(['\n', '\r']))
}

fn drops(key: &str, value: &str) -> bool {
    is_credential(key, value) || (key.starts_with("remote.") && has_userinfo(value))
}

/// A value quoted for a git configuration file.
fn quote(v: &str) -> String {
    let mut s = String::from("\"");
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// The text that adds `removed` back to a file that changed meanwhile.
fn appended(removed: &[(String, String)]) -> String {
    let mut s = String::from("\n");
    for (k, v) in removed {
        let Some(first) = k.find('.') else { continue };
        let last = k.rfind('.').unwrap_or(first);
        let sec = &k[..first];
        let name = &k[last + 1..];
        let hdr = if last > first {
            let sub = k[first + 1..last]
                .replace('\\', "\\\\")
                .replace('"', "\\\"");
            format!("[{sec} \"{sub}\"]")
        } else {
            format!("[{sec}]")
        };
        if sec.eq_ignore_ascii_case("remote") && (name == "url" || name == "pushurl") {
            // The rewritten URL stays; the credential comes back as an insteadOf.
            let clean = without_userinfo(v);
            s.push_str(&format!(
                "[url {}]\n\tinsteadOf = {}\n",
                quote(v),
                quote(&clean)
            ));
            continue;
        }
        s.push_str(&format!("{hdr}\n\t{name} = {}\n", quote(v)));
    }
    s
}

/// The configuration files to look at: `.git/config` and what it includes
/// from inside the workspace (up to 5 levels).
fn config_files(workspace: &Path) -> Vec<PathBuf> {
    let git = workspace.join(".git");
    if !git.is_dir() {
        return Vec::new();
    }
    let first = git.join("config");
    if !first.is_file() {
        return Vec::new();
    }
    vec![first]
}

/// The include entries of `entries` (in `file`) that name an existing file
/// outside `workspace`: no sandboxed step can read it (under Landlock git
/// would stop at it), so they are withheld too and given to plangate's git.
fn includes_outside(
    file: &Path,
    entries: &[(String, String)],
    workspace: &Path,
) -> Vec<(String, String)> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let home = crate::environ::var_os("HOME").map(PathBuf::from);
    entries
        .iter()
        .filter(|(k, _)| is_include(k))
        .filter(|(_, v)| {
            let p = match (v.strip_prefix("~/"), &home) {
                (Some(rest), Some(h)) => h.join(rest),
                _ => dir.join(v),
            };
            let p = p.canonicalize().unwrap_or(p);
            p.exists() && !p.starts_with(workspace)
        })
        .cloned()
        .collect()
}

fn is_include(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    (k.starts_with("include.") || k.starts_with("includeif.")) && k.ends_with(".path")
}

/// Includes (`include.path`, `includeIf.*.path`) of `entries`, resolved
/// against the folder of `file`.
fn includes(file: &Path, entries: &[(String, String)]) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new("."));
    entries
        .iter()
        .filter(|(k, _)| is_include(k))
        .filter(|(_, v)| !v.starts_with('~'))
        .map(|(_, v)| dir.join(v))
        .collect()
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Write `bytes` to `path` in place (keeping its mode and inode).
fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

fn put_back(files: &[Rewritten]) -> Result<(), String> {
    for f in files {
        let now = std::fs::read(&f.path).unwrap_or_default();
        let bytes = if now == f.sanitized || !f.path.exists() {
            f.original.clone()
        } else {
            let mut b = now;
            b.extend_from_slice(appended(&f.removed).as_bytes());
            b
        };
        if !f.path.exists() {
            if let Some(parent) = f.path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            std::fs::write(&f.path, &bytes)
        } else {
            write_in_place(&f.path, &bytes)
        }
        .map_err(|e| {
            format!(
                "cannot put the withheld git credentials back into {}: {e}",
                f.path.display()
            )
        })?;
    }
    Ok(())
}

fn pid_alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(|p| {
        rustix::process::Pid::from_raw(p)
            .is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
    }) && pid != std::process::id()
}

fn supply_of(files: &[Rewritten], workspace: &Path) -> Supply {
    let mut s = Supply::default();
    for f in files {
        let rel = f.path.strip_prefix(workspace).map_or_else(
            |_| f.path.display().to_string(),
            |r| r.display().to_string(),
        );
        for (k, v) in &f.removed {
            s.withheld.push(format!("{} ({rel})", shown(k)));
            let lk = k.to_ascii_lowercase();
            if is_include(k) {
                // Made absolute: git resolves a relative one against the file.
                let dir = f.path.parent().unwrap_or(Path::new("."));
                let v = if v.starts_with('~') || Path::new(v).is_absolute() {
                    v.clone()
                } else {
                    dir.join(v).display().to_string()
                };
                s.always.push((k.clone(), v));
            } else if (lk.starts_with("http.") && lk.ends_with(".extraheader"))
                || lk.starts_with("url.")
            {
                s.config.push((k.clone(), v.clone()));
            } else if lk.starts_with("remote.") {
                s.config
                    .push((format!("url.{v}.insteadOf"), without_userinfo(v)));
            }
        }
    }
    s
}

/// The configuration files of `workspace` that hold credentials, each with
/// its text without them (nothing is written here).
fn scan(workspace: &Path) -> Result<Vec<Rewritten>, String> {
    let mut files = Vec::new();
    let mut queue = config_files(workspace);
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(path) = queue.pop() {
        if seen.contains(&path) || seen.len() > 16 {
            continue;
        }
        seen.push(path.clone());
        let original =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        // Git missing or refusing: fine for a file that holds nothing like a
        // credential; otherwise the run is refused (fail-close).
        let entries = match list(&path) {
            Ok(Some(e)) => e,
            Ok(None) if !looks_sensitive(&original) => continue,
            Err(_) if !looks_sensitive(&original) => continue,
            Ok(None) => {
                return Err(format!(
                    "{} may hold a credential and git is not installed to read it; install git or remove the credential (actions/checkout: `persist-credentials: false`)",
                    path.display()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "{e}; it may hold a credential, so the run was not started"
                ));
            }
        };
        for inc in includes(&path, &entries) {
            let inc = inc.canonicalize().unwrap_or(inc);
            if inc.starts_with(workspace) && inc.is_file() {
                queue.push(inc);
            }
        }
        let outside = includes_outside(&path, &entries, workspace);
        let removed: Vec<(String, String)> = entries
            .iter()
            .filter(|(k, v)| drops(k, v) || outside.contains(&(k.clone(), v.clone())))
            .cloned()
            .collect();
        if removed.is_empty() {
            continue;
        }
        let sanitized = strip(&original, &outside).map_err(|e| {
            format!(
                "cannot withhold the git credentials in {}: {e}",
                path.display()
            )
        })?;
        files.push(Rewritten {
            path,
            original,
            sanitized,
            removed,
        });
    }
    Ok(files)
}

/// Withhold the credentials of `workspace`'s git configuration for the run
/// (see the module doc). Ok(None) when there are none. Err: the run must not start.
pub(crate) fn withhold(workspace: &Path) -> Result<Option<Withheld>, String> {
    let backup = backup_path(workspace);
    let mut recovered = Vec::new();
    if let Ok(bytes) = std::fs::read(&backup) {
        let b: Backup = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{} (left by an earlier plangate run to put back the git credentials it withheld) cannot be read: {e}; \
                 compare it with .git/config, put back what is missing, then delete it",
                backup.display()
            )
        })?;
        if pid_alive(b.pid) {
            // Another run on this workspace holds them: use its record, change nothing.
            let supply = supply_of(&b.files, workspace);
            return Ok(Some(Withheld {
                backup: None,
                files: Vec::new(),
                supply,
                recovered,
            }));
        }
        put_back(&b.files)?;
        recovered = supply_of(&b.files, workspace).withheld;
        std::fs::remove_file(&backup)
            .map_err(|e| format!("cannot remove {}: {e}", backup.display()))?;
    }
    let files = scan(workspace)?;
    if files.is_empty() {
        return Ok((!recovered.is_empty()).then(|| Withheld {
            backup: None,
            files: Vec::new(),
            supply: Supply::default(),
            recovered,
        }));
    }
    let record = Backup {
        pid: std::process::id(),
        files: files.clone(),
    };
    let json = serde_json::to_vec(&record).map_err(|e| e.to_string())?;
    write_private(&backup, &json).map_err(|e| {
        format!(
            "cannot write {} (the backup of the git credentials withheld from the steps): {e}",
            backup.display()
        )
    })?;
    let mut w = Withheld {
        backup: Some(backup),
        supply: supply_of(&files, workspace),
        files,
        recovered,
    };
    for f in &w.files {
        write_in_place(&f.path, &f.sanitized).map_err(|e| {
            format!(
                "cannot rewrite {} without its credentials: {e}",
                f.path.display()
            )
        })?;
        // The rewritten file must hold none (fail-close).
        let left: Vec<String> = list(&f.path)?
            .unwrap_or_default()
            .iter()
            .filter(|(k, v)| drops(k, v))
            .map(|(k, _)| shown(k))
            .collect();
        if !left.is_empty() {
            let err = format!(
                "{} still holds credentials after plangate removed them ({}); the run was not started",
                f.path.display(),
                left.join(", ")
            );
            let _ = w.restore();
            return Err(err);
        }
    }
    Ok(Some(w))
}

impl Withheld {
    /// Put the credentials back (once); the backup is removed after.
    pub(crate) fn restore(&mut self) -> Result<(), String> {
        let files = std::mem::take(&mut self.files);
        put_back(&files)?;
        if let Some(b) = self.backup.take() {
            let _ = std::fs::remove_file(b);
        }
        Ok(())
    }
}

impl Drop for Withheld {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            crate::output::error(format_args!("{e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_entries_are_recognised() {
        for (k, v, yes) in [
            (
                "http.https://github.com/.extraheader",
                "AUTHORIZATION: basic x",
                true,
            ),
            ("http.extraheader", "x", true),
            ("credential.helper", "store", true),
            ("credential.https://h.example.username", "u", true),
            (
                "url.https://u:p@h.example/.insteadof",
                "https://h.example/",
                true,
            ),
            ("url.https://h.example/.insteadof", "git@h.example:", false),
            (
                "remote.origin.url",
                "https://x-access-token:t@github.com/o/r",
                true,
            ),
            ("remote.origin.url", "https://github.com/o/r", false),
            ("remote.origin.url", "git@github.com:o/r.git", false),
            ("core.bare", "false", false),
            ("http.sslverify", "true", false),
        ] {
            assert_eq!(is_credential(k, v), yes, "{k}={v}");
        }
    }

    #[test]
    fn strip_removes_credentials_and_keeps_the_rest() {
        let cfg = "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://x-access-token:TKN@github.com/o/r\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic TKN\n[credential]\n\thelper = \"!f() { echo password=TKN; }; f\"\n[url \"https://u:TKN@h.example/\"]\n\tinsteadOf = https://h.example/\n[user]\n\tname = n \\\n  continued\n";
        let out = String::from_utf8(strip(cfg.as_bytes(), &[]).expect("strip")).expect("utf8");
        assert!(!out.contains("TKN"), "{out}");
        assert!(out.contains("bare = false"));
        assert!(out.contains("url = \"https://github.com/o/r\""), "{out}");
        assert!(out.contains("fetch = +refs"));
        assert!(out.contains("continued"));
        // A header line holding a credential: refused.
        assert!(strip(b"[http] extraheader = x\n", &[]).is_err());
        // An include of a file outside the workspace: withheld too.
        let inc = vec![("include.path".to_owned(), "/elsewhere".to_owned())];
        let out = strip(
            b"[include]\n\tpath = /elsewhere\n[core]\n\tbare = false\n",
            &inc,
        )
        .expect("strip");
        assert_eq!(out, b"[include]\n[core]\n\tbare = false\n");
    }

    #[test]
    fn appended_entries_parse_back() {
        let removed = vec![
            (
                "http.https://github.com/.extraheader".to_owned(),
                "AUTHORIZATION: basic \"q\"".to_owned(),
            ),
            ("credential.helper".to_owned(), "store".to_owned()),
        ];
        let text = appended(&removed);
        assert!(text.contains("[http \"https://github.com/\"]"), "{text}");
        assert!(
            text.contains("extraheader = \"AUTHORIZATION: basic \\\"q\\\"\""),
            "{text}"
        );
        assert!(
            text.contains("[credential]\n\thelper = \"store\""),
            "{text}"
        );
    }

    #[test]
    fn keys_are_shown_without_passwords() {
        assert_eq!(
            shown("url.https://u:p@h.example/.insteadof"),
            "url.https://***@h.example/.insteadof"
        );
        assert_eq!(without_userinfo("https://u:p@h/x@y"), "https://h/x@y");
    }
}
