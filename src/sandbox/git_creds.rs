//! Credentials a checkout left in the workspace's git configuration
//! (`actions/checkout` persists `http.https://github.com/.extraheader:
//! AUTHORIZATION: basic ...`), withheld from every step for the run.
//!
//! Before any step runs, [`withhold`] reads every configuration file git
//! reads for the workspace ([`config_files`]: `config` and `config.worktree`
//! of its git directory, of each submodule's in `modules/` and of each
//! linked worktree's in `worktrees/`, of a non-absorbed submodule's
//! `PATH/.git`; and the files they include from inside the workspace,
//! relatively, through `~/` or by an `includeIf`) with `git config --list`,
//! finds the entries that carry a credential ([`is_credential`]), and
//! rewrites each file without them (a URL-valued key loses only its user
//! and password). A second `git config --list` of the result must find none
//! left, or the run is refused (fail-close). A credential store's file
//! inside the workspace (`credential.helper = store --file PATH`) is emptied
//! for the run. Steps, rollbacks and agents
//! (whose staged copy is made from the rewritten files) never see them;
//! plangate's own git tool gets those of the workspace's own repository back
//! through command-scope configuration (`GIT_CONFIG_COUNT`, never argv) for
//! a push or pull ([`Supply::config`]). Credential helpers are not given
//! back: plangate's git runs none; nor are a submodule's or another
//! worktree's.
//!
//! Every write is a new file renamed over the old one (a new inode): a hard
//! link a step makes to a configuration file keeps the withheld text, never
//! the credentials put back; a file that already has other names is refused
//! (they would keep the credentials).
//!
//! Restoring is crash-safe: the original bytes are written first to a
//! private backup in plangate's own folder ([`state_dir`], mode 0700, which
//! no step may be granted: a `readable` or `writable` path that holds it or
//! lies in it refuses the step) and put back when the run ends (also on
//! SIGINT and SIGTERM, which stop the run in order). A run that was killed
//! outright leaves the backup; the next run on the workspace puts it back
//! before it starts. When a step approved as dangerous changed a file
//! meanwhile, the withheld entries are appended to the changed file rather
//! than the old bytes written over it.

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
    /// A file of the workspace's own repository (its `config`,
    /// `config.worktree` and what they include), whose credentials
    /// plangate's git gets back; not a submodule's or another worktree's.
    #[serde(default = "yes")]
    own: bool,
    /// A credential store's file (`credential.helper = store --file PATH`),
    /// emptied for the run and put back as it was, whatever a step wrote.
    #[serde(default)]
    store: bool,
}

fn yes() -> bool {
    true
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

/// Whether a `git config --list` entry carries a credential: an extra
/// header (`http.*.extraheader`), any `credential.*` entry, a key whose name
/// says it holds a secret (`sendemail.smtpPass`, `*.token`, `*.password`),
/// a key that names a user or password (`url.https://u:p@host/.insteadOf`),
/// or a value holding a URL with a user or password anywhere (`remote.*.url`,
/// `url.*.insteadOf`, `http.proxy`, `lfs.url`, ...; a proxy's
/// `user:pw@host` also without a scheme).
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
    if matches!((section, name), ("http", "extraheader") | ("credential", _)) {
        return true;
    }
    if secret_name(name) {
        return true;
    }
    if name.ends_with("proxy") && proxy_userinfo(value) {
        return true;
    }
    has_userinfo(value)
}

/// A variable name that says its value is a secret.
fn secret_name(name: &str) -> bool {
    ["password", "passwd", "token", "secret", "apikey", "api-key"]
        .iter()
        .any(|w| name.contains(w))
        || name.ends_with("pass")
}

/// A proxy value (`[scheme://][user[:pw]@]host[:port]`) that holds a user.
fn proxy_userinfo(value: &str) -> bool {
    let rest = value.split_once("://").map_or(value, |(_, r)| r);
    rest.split(['/', '?', '#'])
        .next()
        .unwrap_or("")
        .contains('@')
}

/// The subsection of `section.sub.name` (case kept), if any.
fn subsection(key: &str) -> Option<&str> {
    let first = key.find('.')?;
    let last = key.rfind('.')?;
    (last > first).then(|| &key[first + 1..last])
}

/// Whether text holds a URL with a user or password anywhere in it
/// (`https://user:pw@host/...`, `https://token@host/`); for ssh, only a
/// password counts (`ssh://git@host/` names the account, not a secret).
fn has_userinfo(text: &str) -> bool {
    text.match_indices("://").any(|(i, _)| {
        let scheme = text[..i]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        let rest = &text[i + 3..];
        let authority = rest
            .split(|c: char| matches!(c, '/' | '?' | '#' | '"' | '\\') || c.is_whitespace())
            .next()
            .unwrap_or("");
        match authority.rsplit_once('@') {
            None => false,
            Some((user, _)) if scheme.contains("ssh") => user.contains(':'),
            Some(_) => true,
        }
    })
}

/// A key whose value is a URL that plangate rewrites without its user and
/// password rather than drop (`remote.*.url`, `submodule.*.url`, `lfs.url`).
fn is_url_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.ends_with(".url") || k.ends_with(".pushurl")
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

/// plangate's own folder for what no step may read: the system's temporary
/// folder's `plangate-state-UID` (mode 0700). A step's `readable` or
/// `writable` path that holds it or lies inside it is refused
/// ([`covers_state`]).
pub(crate) fn state_dir() -> PathBuf {
    let uid = rustix::process::geteuid().as_raw();
    crate::environ::temp_dir().join(format!("plangate-state-{uid}"))
}

/// Whether granting `path` to a step would let it reach [`state_dir`]
/// (`path` holds it or lies inside it, also through symbolic links).
pub(crate) fn covers_state(path: &Path) -> bool {
    let state = state_dir();
    let real_state = state.canonicalize().ok().or_else(|| {
        state
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .map(|p| p.join(state.file_name().unwrap_or_default()))
    });
    let real = path.canonicalize().ok();
    let mut forms = vec![state];
    forms.extend(real_state);
    let mut paths = vec![path.to_path_buf()];
    paths.extend(real);
    paths
        .iter()
        .any(|p| forms.iter().any(|s| s.starts_with(p) || p.starts_with(s)))
}

/// [`state_dir`], made when missing; Err when it is not a folder of
/// plangate's user with mode 0700 (someone else's, or a link: refused).
fn private_state_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
    let dir = state_dir();
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot make {}: {e}", dir.display())),
    }
    let m = dir
        .symlink_metadata()
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let uid = rustix::process::geteuid().as_raw();
    if !m.is_dir() || m.uid() != uid {
        return Err(format!(
            "{} (plangate's private folder) is not a folder of this user; remove it",
            dir.display()
        ));
    }
    if m.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot make {} private: {e}", dir.display()))?;
    }
    Ok(dir)
}

/// The name of the backup for `workspace` (in [`state_dir`]).
fn backup_name(workspace: &Path) -> String {
    use sha2::{Digest, Sha256};
    let h = hex::encode(Sha256::digest(workspace.as_os_str().as_encoded_bytes()));
    format!("git-credentials-{}", &h[..16])
}

/// Where the backup for `workspace` lives.
fn backup_path(workspace: &Path) -> PathBuf {
    state_dir().join(backup_name(workspace))
}

/// Where plangate before 0.x kept it (read to put back what a killed run left).
fn legacy_backup_path(workspace: &Path) -> PathBuf {
    crate::environ::temp_dir().join(format!("plangate-{}", backup_name(workspace)))
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
        || t.contains("pass")
        || t.contains("token")
        || t.contains("secret")
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
                if is_url_key(&key)
                    && has_userinfo(value)
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
    is_credential(key, value)
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
        if is_url_key(k) && has_userinfo(v) {
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

/// Most configuration files (and folders walked to find them) looked at;
/// beyond, the run is refused rather than some left unread (fail-close).
const MAX_FILES: usize = 1024;
const MAX_FOLDERS: usize = 20_000;

/// The git directories of `workspace` whose configuration git reads: the
/// workspace's own (`.git`, or the folder a `.git` file names when it lies
/// inside the workspace) and the non-absorbed submodules' (`PATH/.git`
/// folders of the paths `.gitmodules` lists). The absorbed submodules and
/// the linked worktrees live inside the first (`modules/`, `worktrees/`).
fn git_dirs(workspace: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let dotgit = workspace.join(".git");
    if let Some(d) = git_dir_of(&dotgit, workspace) {
        dirs.push(d);
    }
    // `.gitmodules`' paths: a submodule whose `.git` is a folder of its own.
    let gm = workspace.join(".gitmodules");
    if gm.is_file()
        && let Ok(Some(entries)) = list(&gm)
    {
        for (k, v) in entries {
            let k = k.to_ascii_lowercase();
            if !(k.starts_with("submodule.") && k.ends_with(".path")) {
                continue;
            }
            let rel = Path::new(&v);
            if rel.is_absolute()
                || rel
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                continue;
            }
            if let Some(d) = git_dir_of(&workspace.join(rel).join(".git"), workspace)
                && !dirs.contains(&d)
            {
                dirs.push(d);
            }
        }
    }
    dirs
}

/// The git directory a `.git` entry stands for, if it lies inside `workspace`.
fn git_dir_of(dotgit: &Path, workspace: &Path) -> Option<PathBuf> {
    let meta = dotgit.symlink_metadata().ok()?;
    let dir = if meta.is_dir() {
        dotgit.to_path_buf()
    } else if meta.is_file() {
        let text = std::fs::read_to_string(dotgit).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        let base = dotgit.parent().unwrap_or(Path::new("."));
        base.join(target)
    } else {
        return None;
    };
    let dir = dir.canonicalize().ok()?;
    (dir.starts_with(workspace) && dir.is_dir()).then_some(dir)
}

/// The configuration files to look at (the includes come on top): every
/// `config` and `config.worktree` of the workspace's git directories and of
/// what lies beneath them (the submodules' in `modules/`, nested ones
/// included; the linked worktrees' in `worktrees/`), the object store, refs,
/// logs and hooks left out. Err when there are too many to read.
fn config_files(workspace: &Path) -> Result<Vec<PathBuf>, String> {
    const SKIP: &[&str] = &["objects", "refs", "logs", "hooks", "lfs", "rr-cache"];
    let mut files = Vec::new();
    let mut stack = git_dirs(workspace);
    let mut folders = 0usize;
    while let Some(dir) = stack.pop() {
        folders += 1;
        if folders > MAX_FOLDERS {
            return Err(too_many_files(workspace));
        }
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if !SKIP.iter().any(|s| name == *s) {
                    stack.push(e.path());
                }
            } else if name == "config" || name == "config.worktree" {
                // A link is followed to the file git reads (kept when it
                // lies inside the workspace; outside, no step reads it).
                let p = if kind.is_symlink() {
                    match e.path().canonicalize() {
                        Ok(t) if t.starts_with(workspace) && t.is_file() => t,
                        _ => continue,
                    }
                } else if kind.is_file() {
                    e.path()
                } else {
                    continue;
                };
                if !files.contains(&p) {
                    files.push(p);
                }
                if files.len() > MAX_FILES {
                    return Err(too_many_files(workspace));
                }
            }
        }
    }
    files.sort();
    Ok(files)
}

fn too_many_files(workspace: &Path) -> String {
    format!(
        "the git directories of {} hold more than {MAX_FILES} configuration files (or {MAX_FOLDERS} folders) to look through for credentials; the run was not started",
        workspace.display()
    )
}

/// The include entries of `entries` (in `file`) that name an existing file
/// outside `workspace`: no sandboxed step can read it (under Landlock git
/// would stop at it), so they are withheld too and given to plangate's git.
fn includes_outside(
    file: &Path,
    entries: &[(String, String)],
    workspace: &Path,
) -> Vec<(String, String)> {
    entries
        .iter()
        .filter(|(k, _)| is_include(k))
        .filter(|(_, v)| {
            include_target(file, v).is_some_and(|p| {
                let p = p.canonicalize().unwrap_or(p);
                p.exists() && !p.starts_with(workspace)
            })
        })
        .cloned()
        .collect()
}

pub(crate) fn is_include(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    (k.starts_with("include.") || k.starts_with("includeif.")) && k.ends_with(".path")
}

/// Where an include's path leads: `~/` against `$HOME`, a relative path
/// against the folder of the file that holds it. None for `~user/...`.
fn include_target(file: &Path, value: &str) -> Option<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new("."));
    if let Some(rest) = value.strip_prefix("~/") {
        return crate::environ::var_os("HOME").map(|h| PathBuf::from(h).join(rest));
    }
    if value.starts_with('~') {
        return None;
    }
    Some(dir.join(value))
}

/// Includes (`include.path`, `includeIf.*.path`, whatever their condition)
/// of `entries`, resolved (see [`include_target`]).
fn includes(file: &Path, entries: &[(String, String)]) -> Vec<PathBuf> {
    entries
        .iter()
        .filter(|(k, _)| is_include(k))
        .filter_map(|(_, v)| include_target(file, v))
        .collect()
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::atomic::write(path, crate::atomic::Mode::Set(0o600), true, |w| {
        w.write_all(bytes)
    })
}

/// Write `bytes` to `path` as a new file renamed over it (a new inode: a
/// hard link a step made to the old file keeps the old bytes, never the
/// new; a symbolic link put there is replaced, not followed), with the old
/// file's mode and owner; a missing file is made (mode 0600).
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mode = if path.symlink_metadata().is_ok_and(|m| m.is_file()) {
        crate::atomic::Mode::Like
    } else {
        crate::atomic::Mode::Set(0o600)
    };
    crate::atomic::write(path, mode, true, |w| w.write_all(bytes))
}

fn put_back(files: &[Rewritten]) -> Result<(), String> {
    for f in files {
        // Read without following a link: a step that put one there must not
        // make plangate copy what it points at into the file.
        let now = f
            .path
            .symlink_metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|_| std::fs::read(&f.path).ok());
        let bytes = match now {
            Some(now) if now != f.sanitized && !f.store => {
                let mut b = now;
                b.extend_from_slice(appended(&f.removed).as_bytes());
                b
            }
            _ => f.original.clone(),
        };
        if let Some(parent) = f.path.parent()
            && !parent.exists()
        {
            let _ = std::fs::create_dir_all(parent);
        }
        replace(&f.path, &bytes).map_err(|e| {
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
            if !f.own {
                // A submodule's or another worktree's: withheld, not given back.
                continue;
            }
            let lk = k.to_ascii_lowercase();
            let pair = if is_include(k) {
                // Made absolute: git resolves a relative one against the file.
                let v = include_target(&f.path, v)
                    .map_or_else(|| v.clone(), |p| p.display().to_string());
                if !s.always.contains(&(k.clone(), v.clone())) {
                    s.always.push((k.clone(), v));
                }
                continue;
            } else if lk.starts_with("credential.") {
                // plangate's git runs no credential helper.
                continue;
            } else if is_url_key(k) && has_userinfo(v) {
                (format!("url.{v}.insteadOf"), without_userinfo(v))
            } else {
                (k.clone(), v.clone())
            };
            if !s.config.contains(&pair) {
                s.config.push(pair);
            }
        }
    }
    s
}

/// The configuration files of `workspace` (canonical) that hold
/// credentials, each with its text without them (nothing is written here).
fn scan(workspace: &Path) -> Result<Vec<Rewritten>, String> {
    let own: Vec<PathBuf> = git_dir_of(&workspace.join(".git"), workspace)
        .map(|d| vec![d.join("config"), d.join("config.worktree")])
        .unwrap_or_default();
    let mut files = Vec::new();
    let mut queue: Vec<(PathBuf, bool)> = config_files(workspace)?
        .into_iter()
        .map(|p| {
            let mine = own.contains(&p);
            (p, mine)
        })
        .collect();
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some((path, mine)) = queue.pop() {
        if seen.contains(&path) {
            continue;
        }
        if seen.len() >= MAX_FILES {
            return Err(too_many_files(workspace));
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
                queue.push((inc, mine));
            }
        }
        for (k, store) in stores(&entries, workspace) {
            if files.iter().any(|f: &Rewritten| f.path == store) {
                continue;
            }
            refuse_links(&store)?;
            let original = std::fs::read(&store)
                .map_err(|e| format!("cannot read {}: {e}", store.display()))?;
            files.push(Rewritten {
                path: store,
                original,
                sanitized: Vec::new(),
                removed: vec![(k, "(the credential store's file)".to_owned())],
                own: false,
                store: true,
            });
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
        refuse_links(&path)?;
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
            own: mine,
            store: false,
        });
    }
    Ok(files)
}

/// The files of `credential.helper = store --file PATH` entries (the store
/// keeps `https://user:token@host` lines there) that lie inside `workspace`:
/// `(key, canonical path)`. The file is relative to the repository's top
/// folder, or `~/...`.
fn stores(entries: &[(String, String)], workspace: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for (k, v) in entries {
        let lk = k.to_ascii_lowercase();
        if !(lk.starts_with("credential.") && lk.ends_with(".helper")) {
            continue;
        }
        let words: Vec<&str> = v.split_whitespace().collect();
        let Some(first) = words.first() else { continue };
        if !(*first == "store" || first.ends_with("git-credential-store")) {
            continue;
        }
        let mut named = None;
        for (i, w) in words.iter().enumerate() {
            if let Some(p) = w.strip_prefix("--file=") {
                named = Some(p.to_owned());
            } else if *w == "--file" {
                named = words.get(i + 1).map(|p| (*p).to_owned());
            }
        }
        let target = match named {
            Some(p) => match p.strip_prefix("~/") {
                Some(rest) => crate::environ::var_os("HOME").map(|h| PathBuf::from(h).join(rest)),
                None => Some(workspace.join(p)),
            },
            None => {
                crate::environ::var_os("HOME").map(|h| PathBuf::from(h).join(".git-credentials"))
            }
        };
        if let Some(t) = target.and_then(|t| t.canonicalize().ok())
            && t.starts_with(workspace)
            && t.is_file()
        {
            out.push((k.clone(), t));
        }
    }
    out
}

/// Err when the file has other names (hard links): they would keep the
/// credentials plangate withholds under this one.
fn refuse_links(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt as _;
    let m = path
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if m.nlink() > 1 {
        return Err(format!(
            "{} holds git credentials and has {} names (hard links): another name would keep them readable while plangate withholds them; remove the other links (`find / -xdev -samefile {}`) or the credentials",
            path.display(),
            m.nlink(),
            path.display()
        ));
    }
    Ok(())
}

/// Put back what a run killed earlier left in `backup` (Ok(None): nothing
/// there; Ok(Some(Err(supply))): another run on the workspace, still alive,
/// holds them).
fn recover(backup: &Path, workspace: &Path) -> Result<Option<Result<Vec<String>, Supply>>, String> {
    let Ok(bytes) = std::fs::read(backup) else {
        return Ok(None);
    };
    let b: Backup = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{} (left by an earlier plangate run to put back the git credentials it withheld) cannot be read: {e}; \
             compare it with .git/config, put back what is missing, then delete it",
            backup.display()
        )
    })?;
    // Only files of this workspace are ever written from a backup.
    if let Some(f) = b.files.iter().find(|f| {
        !f.path.is_absolute()
            || f.path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
            || !f.path.starts_with(workspace)
    }) {
        return Err(format!(
            "{} names {}, which is not in the workspace; it was not written: check and delete the backup",
            backup.display(),
            f.path.display()
        ));
    }
    if pid_alive(b.pid) {
        return Ok(Some(Err(supply_of(&b.files, workspace))));
    }
    put_back(&b.files)?;
    let recovered = supply_of(&b.files, workspace).withheld;
    std::fs::remove_file(backup).map_err(|e| format!("cannot remove {}: {e}", backup.display()))?;
    Ok(Some(Ok(recovered)))
}

/// Withhold the credentials of `workspace`'s git configuration for the run
/// (see the module doc). Ok(None) when there are none. Err: the run must not start.
pub(crate) fn withhold(workspace: &Path) -> Result<Option<Withheld>, String> {
    let workspace = &workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let state = state_dir();
    if state.starts_with(workspace) {
        return Err(format!(
            "plangate's private folder {} would lie inside the workspace, where every step reads; set TMPDIR to a folder outside it",
            state.display()
        ));
    }
    let backup = backup_path(workspace);
    let mut recovered = Vec::new();
    for b in [legacy_backup_path(workspace), backup.clone()] {
        match recover(&b, workspace)? {
            None => {}
            Some(Ok(r)) => recovered.extend(r),
            Some(Err(supply)) => {
                // Another run on this workspace holds them: use its record, change nothing.
                return Ok(Some(Withheld {
                    backup: None,
                    files: Vec::new(),
                    supply,
                    recovered,
                }));
            }
        }
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
    private_state_dir()
        .and_then(|_| write_private(&backup, &json).map_err(|e| e.to_string()))
        .map_err(|e| {
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
    for i in 0..w.files.len() {
        let (path, sanitized) = (w.files[i].path.clone(), w.files[i].sanitized.clone());
        if let Err(e) = replace(&path, &sanitized) {
            let _ = w.restore();
            return Err(format!(
                "cannot rewrite {} without its credentials: {e}",
                path.display()
            ));
        }
        // The rewritten file must hold none (fail-close).
        let left: Vec<String> = match list(&path) {
            Ok(l) => l
                .unwrap_or_default()
                .iter()
                .filter(|(k, v)| drops(k, v))
                .map(|(k, _)| shown(k))
                .collect(),
            Err(e) => vec![e],
        };
        if !left.is_empty() {
            let err = format!(
                "{} still holds credentials after plangate removed them ({}); the run was not started",
                path.display(),
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
            ("http.proxy", "http://u:p@proxy.example:3128", true),
            (
                "http.https://h.example/.proxy",
                "u:p@proxy.example:3128",
                true,
            ),
            ("http.proxy", "proxy.example:3128", false),
            ("lfs.url", "https://u:p@h.example/o/r.git/info/lfs", true),
            ("lfs.url", "https://h.example/o/r.git/info/lfs", false),
            (
                "url.https://h.example/.pushinsteadof",
                "https://x:t@h.example/",
                true,
            ),
            (
                "url.https://h.example/.insteadof",
                "https://tok@h.example/",
                true,
            ),
            ("remote.origin.pushurl", "https://tok@h.example/o/r", true),
            ("sendemail.smtppass", "p", true),
            ("hub.oauthtoken", "t", true),
            ("gitlab.h.example.token", "t", true),
            ("submodule.sub.url", "https://u:p@h.example/s", true),
            ("submodule.sub.url", "../s", false),
            ("remote.origin.url", "ssh://git@github.com/o/r", false),
            ("remote.origin.url", "git+ssh://git:pw@h.example/o/r", true),
            ("remote.origin.url", "https://tok@h.example/o/r", true),
            ("core.sshcommand", "ssh -i k", false),
            ("include.path", "../x.cfg", false),
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
        // A submodule's URL loses its user and password, and stays.
        let out = strip(
            b"[submodule \"s\"]\n\turl = https://tok:TKN@h.example/s\n",
            &[],
        )
        .expect("strip");
        assert_eq!(out, b"[submodule \"s\"]\n\turl = \"https://h.example/s\"\n");
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
    fn the_private_folder_is_covered_by_itself_its_parents_and_what_is_inside() {
        let s = state_dir();
        let parent = s.parent().expect("parent");
        for p in [
            s.clone(),
            parent.to_path_buf(),
            PathBuf::from("/"),
            s.join("x/y"),
        ] {
            assert!(covers_state(&p), "{}", p.display());
        }
        for p in [
            parent.join("plangate-state"),
            parent.join("other"),
            PathBuf::from("/usr"),
        ] {
            assert!(!covers_state(&p), "{}", p.display());
        }
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
