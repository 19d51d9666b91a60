//! Committing a run's workspace changes onto a branch of the remote, for a
//! pull request (GitHub) or a merge request (GitLab): the one home of the
//! push, whatever forge asks for it.
//!
//! Nothing of the user's checkout is written, nor its git config read: the
//! commit is built in a bare repository in a private temporary folder
//! (mode 0700 under `$TMPDIR`, removed when [`Prepared`] is dropped). The
//! base branch is fetched from the remote (`--depth=1`), the files the diff
//! summary lists are laid on its tree by `git fast-import` at the
//! workspace's folder the diff recorded before the first step (added and
//! modified files read again beneath the workspace with no symbolic link
//! followed, each sent only if its git blob id is the one the diff
//! recorded, symbolic links as links pointing inside, deleted and
//! renamed-away paths removed), and the commit is pushed to `refs/heads/<branch>`: a new
//! branch, or (only when the caller says it is the head of its own open
//! request, [`Target::replace`]) over the existing one with
//! `--force-with-lease` on the head commit the forge's API reported for that
//! request (refused when the remote's branch is elsewhere). Never onto the base.
//!
//! Every git runs with an empty environment but `PATH`, `HOME` (the private
//! folder), `LC_ALL=C` and the proxy variables; no system or global config,
//! no credential helper but plangate's own (`credential.helper=`), no prompt
//! (`GIT_TERMINAL_PROMPT=0`, `core.askPass=`), no hooks, only the `https`
//! (and `http`) protocols. The credential goes to the network commands only,
//! through a socket read by a command-scope credential helper (see
//! `push_git`): never an argument, never a file, never an environment. Its
//! value is remembered by the redaction layer, so no error message can carry it.
//!
//! Fail-close: a branch or base that is not a legal ref name, a path that
//! climbs out, names `.git` or cannot be read back from the summary (`\`), a
//! path (new or old) the permission rules deny, a file git ignores (a step
//! was not given it: deleting one is left out, git never had it), a
//! file that changed kind since the diff, any file whose bytes hold a secret
//! (the redaction layer's rules and the values plangate was given: the diff
//! summary's own scan sees only what it shows), more than [`MAX_BYTES`]: an
//! error, nothing pushed.
//!
//! For a forge: build the header with [`basic_auth`], the branch with
//! [`branch_name`], then [`prepare`] (fetch and commit) and
//! [`Prepared::push`], or [`Prepared::patch`] for an issue with the patch
//! attached. Blocking: call it from a blocking thread.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};

use base64::Engine as _;

use git::Git;

use crate::model::{Change, FileChange, Level, Risk, ToolName};
use crate::policy::permissions::{self, Access, Compiled};

/// Most bytes of file content one push carries.
pub(crate) const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The most bytes of a patch attached to an issue (the patch policy's `issue` verdict).
pub(crate) const PATCH_MAX: usize = 48 * 1024;
/// The commits' author and committer, unless the caller names another.
pub(crate) const IDENTITY: (&str, &str) = ("plangate", "plangate@users.noreply.invalid");

/// Why nothing was pushed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PushError {
    /// The branch or base is not a legal ref name.
    #[error("`{0}` is not a legal branch name (git check-ref-format)")]
    BadRef(String),
    /// A remote URL plangate will not send a credential to.
    #[error("will not send a credential to `{0}`: only https, or http to a loopback address")]
    BadUrl(String),
    /// A path plangate will not commit.
    #[error("will not commit `{path}`: {why}")]
    BadPath { path: String, why: &'static str },
    /// A file git's ignore rules leave out: not part of a change.
    #[error(
        "will not commit `{0}`: git ignores it (.gitignore, .git/info/exclude or the global excludes), so it is not part of a change; nothing is pushed"
    )]
    Ignored(String),
    /// A file the permission rules deny.
    #[error("will not commit `{path}`: the permission rules deny it ({why}); nothing is pushed")]
    Denied { path: String, why: String },
    /// A file's bytes hold a secret.
    #[error("`{0}` holds what looks like a secret: nothing is pushed")]
    Secret(String),
    /// Too much to push.
    #[error("the changes are larger than {MAX_BYTES} bytes")]
    TooLarge,
    /// The diff summary did not record what the push needs.
    #[error(
        "the run's diff did not record {0} (it was not made by git: see its notes); nothing is pushed"
    )]
    Unrecorded(&'static str),
    /// A file is not what the run's diff recorded, or is reached through a link.
    #[error("will not commit `{path}`: {why}; nothing is pushed")]
    Changed { path: String, why: String },
    /// The branch exists and may not be replaced, or is the base.
    #[error("will not push to `{0}`: {1}")]
    Branch(String, &'static str),
    /// The branch is not where the forge's API said it is.
    #[error("will not push to `{branch}`: {why}; nothing pushed")]
    Moved { branch: String, why: String },
    /// The remote has no default branch to build on.
    #[error("the remote names no default branch (HEAD); declare `base`")]
    NoDefaultBranch,
    /// A file could not be read or the private folder not made.
    #[error("{0}")]
    Io(String),
    /// git failed.
    #[error("`git {what}` failed: {why}")]
    Git { what: String, why: String },
}

/// The `http.extraheader` value of HTTP basic authentication (`user` is
/// `x-access-token` for a GitHub token, `oauth2` for a GitLab one). The
/// value is remembered by the redaction layer.
pub(crate) fn basic_auth(user: &str, token: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{token}"));
    crate::redact::remember([token.as_bytes().to_vec(), encoded.as_bytes().to_vec()]);
    format!("AUTHORIZATION: basic {encoded}")
}

/// Why a URL may not carry a credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Insecure {
    /// `http` to a host that is not a loopback address: the token in clear.
    PlainHttp,
    /// Neither `https` to a host nor `http`.
    NotHttps,
}

/// Whether a credential may be sent to `uri`: `https` to a host, or `http`
/// to a loopback address (a local test server). The one rule of the push
/// remote and both forges' API bases.
pub(crate) fn secure(uri: &http::Uri) -> Result<(), Insecure> {
    let host = uri.host().unwrap_or("");
    match uri.scheme_str() {
        Some("https") if !host.is_empty() => Ok(()),
        Some("http") if matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "::1") => Ok(()),
        Some("http") => Err(Insecure::PlainHttp),
        _ => Err(Insecure::NotHttps),
    }
}

/// The URL a credential may be sent to ([`secure`]); an `https` one has no
/// query (a loopback `http` one may).
fn url_ok(url: &str) -> bool {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return false;
    };
    secure(&uri).is_ok() && (uri.scheme_str() == Some("http") || uri.query().is_none())
}

/// Whether `sha` is a full commit id (SHA-1 or SHA-256, hex): a lease on
/// anything else would not hold.
fn lease_ok(sha: &str) -> bool {
    matches!(sha.len(), 40 | 64) && sha.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `name` is a legal branch name (`git check-ref-format refs/heads/<name>`).
fn ref_ok(name: &str) -> bool {
    if name.is_empty() || name.starts_with('-') || name.len() > 250 {
        return false;
    }
    Command::new(crate::environ::git())
        .args(["check-ref-format", &format!("refs/heads/{name}")])
        .env_clear()
        .env("PATH", crate::environ::var_os("PATH").unwrap_or_default())
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The branch of `template` (`{plan}` and `{run}` replaced), checked with
/// `git check-ref-format`.
pub(crate) fn branch_name(template: &str, plan: &str, run: &str) -> Result<String, PushError> {
    let name = template.replace("{plan}", plan).replace("{run}", run);
    if ref_ok(&name) {
        Ok(name)
    } else {
        Err(PushError::BadRef(name))
    }
}

/// Where to push, and with what.
pub(crate) struct Target<'a> {
    /// The repository (`https://github.com/OWNER/REPO.git`): from the forge's
    /// own settings, never from the workspace's config (a step could change it).
    pub url: &'a str,
    /// The whole extra header ([`basic_auth`]).
    pub auth_header: &'a str,
    /// The branch to create or replace.
    pub branch: &'a str,
    /// The branch to build on; `None`: the remote's default branch (its HEAD).
    pub base: Option<&'a str>,
    /// The branch may already exist and is replaced: it is the head of this
    /// plan's open pull or merge request, and this is the head commit the
    /// forge's API reported for it (the lease: the branch must still be
    /// there). `None`: a branch that exists is never overwritten.
    pub replace: Option<&'a str>,
}

/// What to commit.
pub(crate) struct Commit<'a> {
    /// The run's workspace (the diff summary's paths are relative to it).
    pub workspace: &'a Path,
    /// The diff summary's files (each with the blob id git recorded).
    pub files: &'a [FileChange],
    /// The workspace's folder inside its repository, as the diff recorded it
    /// before the first step ([`crate::model::DiffSummary::prefix`]).
    pub prefix: Option<&'a str>,
    /// The commit message.
    pub message: &'a str,
    /// Author and committer `(name, email)` ([`IDENTITY`]).
    pub identity: (&'a str, &'a str),
    /// The run's policy (the report's): its permission rules judge every
    /// path committed. `None`: no permission list.
    pub policy: Option<&'a crate::model::EffectivePolicy>,
}

/// A commit built on the base, ready to push; the private folder goes with it.
pub(crate) struct Prepared {
    dir: tempfile::TempDir,
    url: String,
    header: String,
    branch: String,
    replace: Option<String>,
    /// The base branch.
    pub base: String,
    /// Its commit.
    pub base_sha: String,
    /// The new commit.
    pub commit: String,
}

/// How a file enters the commit.
enum Entry {
    Put {
        path: String,
        mode: &'static str,
        bytes: Vec<u8>,
    },
    Remove(String),
}

/// A summary path plangate will commit: relative, `/`-separated, no `.`/`..`,
/// no `.git` component, no `\` (how a non-UTF-8 name is written), no control character.
fn path_ok(path: &str) -> Result<(), PushError> {
    let bad = |why| {
        Err(PushError::BadPath {
            path: path.to_owned(),
            why,
        })
    };
    if path.is_empty() || path.starts_with('/') {
        return bad("not a relative path");
    }
    if path.contains('\\') || path.chars().any(char::is_control) {
        return bad("its name cannot be read back exactly");
    }
    for seg in path.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return bad("not a plain relative path");
        }
        if seg.eq_ignore_ascii_case(".git") {
            return bad("it is inside a `.git` folder");
        }
    }
    Ok(())
}

/// Why the permission rules deny `path` (relative to the workspace), if
/// they do: some tool may not read it (read is the lowest level, so every
/// level is denied), at the dangerous risk. The same test that withholds a
/// file's content from the diff summary (`engine::finish::start_tracker`).
fn denied(lists: &[Compiled], path: &str) -> Option<String> {
    if lists.is_empty() {
        return None;
    }
    let needs = [Access {
        resource: path.to_owned(),
        level: Level::Read,
    }];
    ToolName::ALL.iter().find_map(|tool| {
        let v = permissions::evaluate_compiled(lists, tool.as_str(), &needs, Risk::Dangerous);
        (!v.allowed).then_some(v.reason)
    })
}

/// The git blob id of `bytes` in the hash of `like` (64 hex digits: SHA-256, else SHA-1).
pub(crate) fn blob_id(bytes: &[u8], like: &str) -> String {
    let header = format!("blob {}\0", bytes.len());
    if like.len() == 64 {
        use sha2::Digest as _;
        let mut h = sha2::Sha256::new();
        h.update(header.as_bytes());
        h.update(bytes);
        hex::encode(h.finalize())
    } else {
        use sha1::Digest as _;
        let mut h = sha1::Sha1::new();
        h.update(header.as_bytes());
        h.update(bytes);
        hex::encode(h.finalize())
    }
}

/// Whether a symbolic link at `rel` pointing to `target` stays inside the
/// workspace: relative, never climbing above the workspace's top.
fn target_ok(rel: &str, target: &[u8]) -> Result<(), &'static str> {
    if target.is_empty() {
        return Err("it is a symbolic link with no target");
    }
    if target.starts_with(b"/") {
        return Err("it is a symbolic link to an absolute path, outside the workspace");
    }
    let mut depth = rel.matches('/').count();
    for seg in target.split(|b| *b == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => {
                depth = depth
                    .checked_sub(1)
                    .ok_or("it is a symbolic link that climbs out of the workspace")?;
            }
            _ => depth += 1,
        }
    }
    Ok(())
}

/// The workspace, opened once: every file is read beneath it with no
/// symbolic link followed at any component (`openat2` with
/// `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH`; where the kernel lacks it,
/// folder by folder with `O_NOFOLLOW | O_DIRECTORY`).
struct Beneath {
    root: rustix::fd::OwnedFd,
}

impl Beneath {
    fn open(workspace: &Path) -> Result<Beneath, PushError> {
        use rustix::fs::{Mode, OFlags};
        let root = rustix::fs::open(
            workspace,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            PushError::Io(format!(
                "cannot open the workspace {}: {e}",
                workspace.display()
            ))
        })?;
        Ok(Beneath { root })
    }

    /// The folder `dir` (`/`-separated, relative; `""`: the workspace).
    fn folder(&self, path: &str, dir: &str) -> Result<rustix::fd::OwnedFd, PushError> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        use rustix::io::Errno;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fail = |e: Errno| {
            if e == Errno::LOOP || e == Errno::NOTDIR || e == Errno::XDEV {
                PushError::Changed {
                    path: path.to_owned(),
                    why: "a folder on its path is a symbolic link (or no longer a folder)".into(),
                }
            } else {
                PushError::Io(format!("cannot read `{path}`: {e}"))
            }
        };
        if dir.is_empty() {
            return rustix::fs::openat(&self.root, ".", flags, Mode::empty()).map_err(fail);
        }
        match rustix::fs::openat2(
            &self.root,
            dir,
            flags,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH,
        ) {
            Err(e) if e == Errno::NOSYS || e == Errno::PERM => {}
            other => return other.map_err(fail),
        }
        walk_folders(&self.root, dir).map_err(fail)
    }

    /// The mode and bytes of `path` (checked by [`path_ok`]): a regular
    /// file's content, or a symbolic link's target (which must stay inside).
    fn read(&self, path: &str) -> Result<(&'static str, Vec<u8>), PushError> {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags};
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let folder = self.folder(path, dir)?;
        let io = |e: rustix::io::Errno| PushError::Io(format!("cannot read `{path}`: {e}"));
        let st = rustix::fs::statat(&folder, name, AtFlags::SYMLINK_NOFOLLOW).map_err(io)?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(&folder, name, Vec::new())
                    .map_err(io)?
                    .into_bytes();
                target_ok(path, &target).map_err(|why| PushError::BadPath {
                    path: path.to_owned(),
                    why,
                })?;
                Ok(("120000", target))
            }
            FileType::RegularFile => {
                let fd = rustix::fs::openat(
                    &folder,
                    name,
                    OFlags::RDONLY
                        | OFlags::NOFOLLOW
                        | OFlags::NONBLOCK
                        | OFlags::NOCTTY
                        | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(io)?;
                let st = rustix::fs::fstat(&fd).map_err(io)?;
                if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                    return Err(PushError::BadPath {
                        path: path.to_owned(),
                        why: "it is neither a file nor a symbolic link",
                    });
                }
                if crate::denied::is_denied_id(st.st_dev, st.st_ino) {
                    return Err(PushError::Denied {
                        path: path.to_owned(),
                        why: crate::denied::WHY.to_owned(),
                    });
                }
                let mut bytes = Vec::new();
                std::fs::File::from(fd)
                    .take(MAX_BYTES + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| PushError::Io(format!("cannot read `{path}`: {e}")))?;
                let exec = st.st_mode & 0o111 != 0;
                Ok((if exec { "100755" } else { "100644" }, bytes))
            }
            _ => Err(PushError::BadPath {
                path: path.to_owned(),
                why: "it is neither a file nor a symbolic link",
            }),
        }
    }
}

/// The folder `dir` beneath `root` opened one segment at a time with
/// `O_NOFOLLOW | O_DIRECTORY` (a symbolic link: `ELOOP` or `ENOTDIR`): where `openat2` is missing.
fn walk_folders(
    root: &rustix::fd::OwnedFd,
    dir: &str,
) -> Result<rustix::fd::OwnedFd, rustix::io::Errno> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd = rustix::fs::openat(root, ".", flags, Mode::empty())?;
    for seg in dir.split('/') {
        fd = rustix::fs::openat(&fd, seg, flags, Mode::empty())?;
    }
    Ok(fd)
}

/// The workspace's folder inside its repository as the diff recorded it:
/// `""`, or plain segments each followed by `/`.
fn prefix_ok(prefix: &str) -> Result<(), PushError> {
    match prefix.strip_suffix('/') {
        None if prefix.is_empty() => Ok(()),
        Some(p) if path_ok(p).is_ok() => Ok(()),
        _ => Err(PushError::BadPath {
            path: prefix.to_owned(),
            why: "the workspace's folder in its repository cannot be read back exactly",
        }),
    }
}

/// The entries of the commit, read from the workspace now; every file scanned for secrets.
/// Refused: a path the permission rules deny (new or old), a file git ignores
/// (a deleted one is left out: git never had it).
fn entries(
    workspace: &Path,
    files: &[FileChange],
    prefix: &str,
    lists: &[Compiled],
) -> Result<Vec<Entry>, PushError> {
    let root = Beneath::open(workspace)?;
    let mut out = Vec::new();
    let mut total = 0u64;
    for f in files {
        path_ok(&f.path)?;
        for p in std::iter::once(&f.path).chain(f.old_path.as_ref()) {
            path_ok(p)?;
            if let Some(why) = denied(lists, p) {
                return Err(PushError::Denied {
                    path: p.clone(),
                    why,
                });
            }
        }
        if f.ignored {
            if f.change == Change::Deleted {
                continue;
            }
            return Err(PushError::Ignored(f.path.clone()));
        }
        if let Some(old) = &f.old_path {
            out.push(Entry::Remove(format!("{prefix}{old}")));
        }
        if f.change == Change::Deleted {
            out.push(Entry::Remove(format!("{prefix}{}", f.path)));
            continue;
        }
        let Some(oid) = f.oid.as_deref() else {
            return Err(PushError::Changed {
                path: f.path.clone(),
                why: "git's comparison of the run recorded no content for it (a nested repository, or the diff was not made by git), so nothing proves these are the bytes the run's scan saw".into(),
            });
        };
        let (mode, bytes) = root.read(&f.path)?;
        if blob_id(&bytes, oid) != oid {
            return Err(PushError::Changed {
                path: f.path.clone(),
                why: "its bytes are not those git recorded when the run's diff and secret scan saw it (it changed since, or git's attributes convert it: `text`, `eol`, `working-tree-encoding`)".into(),
            });
        }
        total += bytes.len() as u64;
        if total > MAX_BYTES {
            return Err(PushError::TooLarge);
        }
        if matches!(crate::redact::clean(&bytes), std::borrow::Cow::Owned(_)) {
            return Err(PushError::Secret(f.path.clone()));
        }
        out.push(Entry::Put {
            path: format!("{prefix}{}", f.path),
            mode,
            bytes,
        });
    }
    Ok(out)
}

/// A path as `git fast-import` reads it: C-quoted.
fn quoted(path: &str) -> String {
    let mut s = String::from("\"");
    for c in path.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// The `git fast-import` stream of the commit.
fn stream(base: &str, message: &str, identity: (&str, &str), entries: &[Entry]) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let who = format!("{} <{}> {now} +0000", identity.0, identity.1);
    let mut s = Vec::new();
    let _ = write!(
        s,
        "commit refs/plangate/new\nauthor {who}\ncommitter {who}\ndata {}\n{message}\nfrom {base}\n",
        message.len()
    );
    for e in entries {
        match e {
            Entry::Remove(p) => {
                let _ = writeln!(s, "D {}", quoted(p));
            }
            Entry::Put { path, mode, bytes } => {
                let _ = write!(
                    s,
                    "M {mode} inline {}\ndata {}\n",
                    quoted(path),
                    bytes.len()
                );
                s.extend_from_slice(bytes);
                s.push(b'\n');
            }
        }
    }
    s.push(b'\n');
    s
}

/// The default branch the remote's HEAD names.
fn default_branch(git: &Git<'_>) -> Result<String, PushError> {
    let listed = git.text(&["ls-remote", "--symref", git.url, "HEAD"], true)?;
    listed
        .lines()
        .find_map(|l| {
            l.strip_prefix("ref: refs/heads/")
                .and_then(|r| r.strip_suffix("\tHEAD"))
        })
        .map(str::to_owned)
        .ok_or(PushError::NoDefaultBranch)
}

/// Fetch the base and build the commit in a private repository. Nothing is pushed yet.
pub(crate) fn prepare(target: &Target<'_>, commit: &Commit<'_>) -> Result<Prepared, PushError> {
    if !url_ok(target.url) {
        return Err(PushError::BadUrl(target.url.to_owned()));
    }
    if !ref_ok(target.branch) {
        return Err(PushError::BadRef(target.branch.to_owned()));
    }
    let prefix = commit.prefix.ok_or(PushError::Unrecorded(
        "the workspace's place in its git repository",
    ))?;
    prefix_ok(prefix)?;
    let lists: Vec<Compiled> = commit
        .policy
        .map(|p| p.permission_lists().iter().map(Compiled::new).collect())
        .unwrap_or_default();
    let entries = entries(commit.workspace, commit.files, prefix, &lists)?;
    let dir = tempfile::Builder::new()
        .prefix("plangate-push-")
        .tempdir_in(crate::environ::temp_dir())
        .map_err(|e| PushError::Io(format!("cannot make a private folder: {e}")))?;
    let git = Git {
        dir: dir.path(),
        url: target.url,
        header: target.auth_header,
    };
    git.run(&["init", "--bare", "-q", "repo.git"], false, Vec::new())?;
    let base = match target.base {
        Some(b) => b.to_owned(),
        None => default_branch(&git)?,
    };
    if !ref_ok(&base) {
        return Err(PushError::BadRef(base));
    }
    if base == target.branch {
        return Err(PushError::Branch(base, "it is the base branch"));
    }
    let spec = format!("+refs/heads/{base}:refs/plangate/base");
    git.run(
        &["fetch", "-q", "--depth=1", "--no-tags", target.url, &spec],
        true,
        Vec::new(),
    )?;
    let base_sha = git.text(
        &["rev-parse", "--verify", "refs/plangate/base^{commit}"],
        false,
    )?;
    let input = stream(&base_sha, commit.message, commit.identity, &entries);
    git.run(&["fast-import", "--quiet", "--done"], false, {
        let mut i = input;
        i.extend_from_slice(b"done\n");
        i
    })?;
    let new = git.text(
        &["rev-parse", "--verify", "refs/plangate/new^{commit}"],
        false,
    )?;
    Ok(Prepared {
        url: target.url.to_owned(),
        header: target.auth_header.to_owned(),
        branch: target.branch.to_owned(),
        replace: target.replace.map(str::to_owned),
        base,
        base_sha,
        commit: new,
        dir,
    })
}

impl Prepared {
    fn git(&self) -> Git<'_> {
        Git {
            dir: self.dir.path(),
            url: &self.url,
            header: &self.header,
        }
    }

    /// Whether the commit changes nothing on the base.
    pub(crate) fn is_empty(&self) -> Result<bool, PushError> {
        let tree = |r: &str| {
            self.git()
                .text(&["rev-parse", &format!("{r}^{{tree}}")], false)
        };
        Ok(tree(&self.base_sha)? == tree(&self.commit)?)
    }

    /// Create or replace the branch with the commit (`+<sha>:refs/heads/<branch>`).
    /// A branch that exists is replaced only when [`Target::replace`] names
    /// the head the forge's API reported, only if the remote still has that
    /// head (else someone pushed in between: refused), and with
    /// `--force-with-lease` on it; a new one only if it is still absent.
    pub(crate) fn push(&self) -> Result<(), PushError> {
        let full = format!("refs/heads/{}", self.branch);
        let git = self.git();
        let seen = git.text(&["ls-remote", &self.url, &full], true)?;
        let now = seen
            .lines()
            .find_map(|l| l.strip_suffix(&format!("\t{full}")))
            .unwrap_or("");
        let expected = match self.replace.as_deref() {
            None if now.is_empty() => "",
            None => {
                return Err(PushError::Branch(
                    self.branch.clone(),
                    "it exists and is not the head of this plan's open pull request",
                ));
            }
            Some(api) => {
                if !lease_ok(api) {
                    return Err(PushError::Moved {
                        branch: self.branch.clone(),
                        why: format!(
                            "the forge reported no usable head commit for its open request ({api:?})"
                        ),
                    });
                }
                if !now.eq_ignore_ascii_case(api) {
                    let on_remote = if now.is_empty() { "no branch" } else { now };
                    return Err(PushError::Moved {
                        branch: self.branch.clone(),
                        why: format!(
                            "the forge's API reported head {api} but the remote has {on_remote}: someone pushed to it in between"
                        ),
                    });
                }
                api
            }
        };
        let lease = format!("--force-with-lease={full}:{expected}");
        let spec = format!("+{}:{full}", self.commit);
        git.run(
            &["push", "-q", "--porcelain", &lease, &self.url, &spec],
            true,
            Vec::new(),
        )
        .map(drop)
    }

    /// The unified diff of the commit against its base, at most `max` bytes
    /// (cut at a line), and whether it was cut.
    pub(crate) fn patch(&self, max: usize) -> Result<(String, bool), PushError> {
        let out = self.git().run(
            &[
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "-M",
                &self.base_sha,
                &self.commit,
            ],
            false,
            Vec::new(),
        )?;
        let text = String::from_utf8_lossy(&out);
        if text.len() <= max {
            return Ok((text.into_owned(), false));
        }
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let cut = text[..end].rfind('\n').map_or(0, |i| i + 1);
        Ok((text[..cut].to_owned(), true))
    }
}

#[path = "push_git.rs"]
mod git;

#[cfg(test)]
#[path = "push_tests.rs"]
mod tests;
