//! The one way a step's process starts: inside the sandbox its approval
//! granted (bash commands, rollback commands and agent CLIs all come here).
//!
//! It gives the process a private `TMPDIR`, wraps it in the step's backend
//! (or leaves it unwrapped when the decision says "not enforced"), applies the
//! resource limits, and around it keeps the files that make git run code as
//! they were ([`crate::sandbox::git_guard`]): what a step below dangerous
//! changed there is undone and named, so the caller fails the step.

use crate::model::{Filesystem, Limits};
use crate::process::{self, ProcessOutcome, ProcessSpec};
use crate::sandbox::{
    self, Layout,
    git_guard::{self, Scope, Snapshot},
};

use super::StepContext;
use super::git_store;
use std::path::PathBuf;

/// Most workspace entries looked at to find what the step may not read.
const MAX_WALK: usize = 500_000;

/// The paths in `workspace` the permission rules forbid the step to read,
/// found by walking it now (links not followed): each hidden folder is named
/// once and not entered. A file the step itself later creates under a
/// denied pattern is its own. An error (the step is not run) when the
/// workspace cannot be read or is too large to judge. With them, what the
/// walk saw of git ([`git_store::Seen`]), and with `stamp` every entry
/// beneath them as it is now ([`crate::denied::stamps`]).
pub(crate) fn hidden_paths(
    workspace: &std::path::Path,
    judge: &super::judge::PathJudge,
    stamp: bool,
) -> Result<Found, String> {
    hidden_by(
        workspace,
        |rel| judge.check_rel(rel, crate::model::Level::Read).is_err(),
        stamp,
    )
}

/// What [`hidden_paths`] found: the hidden paths, what the walk saw of
/// git, and the stamps when asked for.
pub(crate) type Found = (
    Vec<std::path::PathBuf>,
    git_store::Seen,
    Option<crate::denied::Stamps>,
);

/// [`hidden_paths`] for any test of a relative path; each hidden path is
/// also recorded by identity ([`crate::denied::record_stamped`]): another name for
/// it never shows its content.
pub(crate) fn hidden_by(
    workspace: &std::path::Path,
    denies: impl Fn(&std::path::Path) -> bool,
    stamp: bool,
) -> Result<Found, String> {
    let mut hidden = Vec::new();
    let mut seen_git = git_store::Seen::default();
    let mut walk = walkdir::WalkDir::new(workspace)
        .min_depth(1)
        .follow_links(false)
        .into_iter();
    let mut seen = 0usize;
    let watch_ids = crate::denied::any();
    while let Some(entry) = walk.next() {
        let entry = entry.map_err(|e| {
            format!("cannot read the workspace to hide what the step may not read: {e}; the step was not run")
        })?;
        seen += 1;
        if seen > MAX_WALK {
            return Err(format!(
                "the workspace holds more than {MAX_WALK} entries: too many to judge which ones the permission rules hide from the step; the step was not run"
            ));
        }
        let Ok(rel) = entry.path().strip_prefix(workspace) else {
            continue;
        };
        // Another name for a denied file (a link or a rename an earlier step
        // made) is hidden like the file.
        let alias = watch_ids
            && entry.file_type().is_file()
            && entry.metadata().is_ok_and(|m| crate::denied::is_denied(&m));
        if alias || denies(rel) {
            if entry.file_type().is_dir() {
                walk.skip_current_dir();
            }
            hidden.push(entry.into_path());
        } else {
            seen_git.note(entry.path(), entry.file_type());
        }
    }
    let mut stamps = stamp.then(crate::denied::Stamps::new);
    let mut within = true;
    for h in &hidden {
        within &= crate::denied::record_stamped(h, stamps.as_mut());
    }
    if !within {
        return Err(crate::denied::too_many());
    }
    Ok((hidden, seen_git, stamps))
}

/// What the step may read besides the usual: what its context grants (an
/// agent's object store and program), and the result files of earlier agent
/// steps it is handed (`PLANGATE_RESULT_<ID>`).
fn readable_extras(ctx: &StepContext) -> Vec<std::path::PathBuf> {
    let mut r = ctx.extra_readable.clone();
    r.extend(
        ctx.run_vars
            .iter()
            .filter(|(k, _)| k.starts_with("PLANGATE_RESULT_"))
            .map(|(_, v)| std::path::PathBuf::from(v))
            .filter(|p| p.is_file()),
    );
    r
}

/// Under Landlock an unreadable `~/.gitconfig` makes git stop ("unable to
/// access ... Permission denied"), where under bwrap it is simply absent: a
/// process whose `$HOME` is not declared readable gets `GIT_CONFIG_GLOBAL=/dev/null`
/// (unless its environment sets it), so git behaves the same on both backends.
fn unreadable_home_git(spec: &mut ProcessSpec, profile: &crate::model::Profile) {
    let Some(home) = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| std::path::PathBuf::from(v))
    else {
        return;
    };
    let declared = profile.readable.iter().chain(&profile.writable);
    let readable = declared.into_iter().any(|p| home.starts_with(p));
    if !readable && !spec.env.iter().any(|(k, _)| k == "GIT_CONFIG_GLOBAL") {
        spec.env
            .push(("GIT_CONFIG_GLOBAL".to_owned(), "/dev/null".to_owned()));
    }
}

/// A finished process and the protected git files it changed (undone).
#[derive(Debug)]
pub(crate) struct Guarded {
    /// How it ended.
    pub process: ProcessOutcome,
    /// Paths (relative to the workspace) it changed that only a dangerous
    /// step may change; they were put back.
    pub undone: Vec<String>,
    /// What it left in nested git repositories that would make git run a
    /// program (relative paths with the reason); removed.
    pub nested: Vec<String>,
    /// How many processes the step left running when it ended (killed by
    /// its supervisor); None when the supervisor could not say (it was
    /// killed, or the step was stopped).
    pub lingering: Option<usize>,
    /// Names the step wrote in its artifact folder that plangate's own
    /// files took meanwhile (a resident bwrap sandbox): removed.
    pub withheld: Vec<String>,
    /// Paths (relative to the workspace) the permission rules deny that the
    /// step wrote, renamed, removed or added to.
    pub touched_denied: Vec<String>,
    /// What the step is warned of: the git object stores hidden from it, and why.
    pub notes: Vec<String>,
}

impl Guarded {
    /// The error a step reports for `undone`, if any.
    pub(crate) fn undone_error(&self) -> Option<String> {
        let mut why = Vec::new();
        if !self.undone.is_empty() {
            why.push(undone_message(&self.undone));
        }
        if !self.nested.is_empty() {
            why.push(nested_message(&self.nested));
        }
        if !self.touched_denied.is_empty() {
            why.push(format!(
                "changed {}, which the permission rules deny (written, renamed, removed or added to): a step may change nothing they deny; Landlock cannot keep a step that may write the workspace out of them, so the step fails (bubblewrap keeps them read-only)",
                shown(&self.touched_denied)
            ));
        }
        if !self.withheld.is_empty() {
            why.push(format!(
                "wrote {} in its artifact folder, where plangate keeps files of its own; what it wrote there was removed",
                shown(&self.withheld)
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}

/// Why a step that changed git's code-running files fails.
pub(crate) fn undone_message(undone: &[String]) -> String {
    let list = shown(undone);
    format!(
        "changed the repository's `.git` or a configuration file git includes ({list}); the changes were undone: only the git tool or a step approved as dangerous may change `.git` (its hooks, configuration, refs, index or objects) or the files its configuration includes from the workspace"
    )
}

/// Why a step that left a nested repository able to run programs fails.
fn nested_message(found: &[String]) -> String {
    format!(
        "left git repositories whose configuration or hooks would make git run a program ({}); they were removed: only a step approved as dangerous may leave them",
        shown(found)
    )
}

/// The first few of `items`, and how many more.
fn shown(items: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut list = items
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        list.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    list
}

/// Run `spec` for the step of `ctx`, inside its sandbox, under `limits`.
pub(crate) async fn run(
    spec: ProcessSpec,
    ctx: &StepContext,
    limits: Option<Limits>,
) -> std::io::Result<Guarded> {
    run_in(spec, ctx, limits, None, None).await
}

/// [`run`] with `home` as the process's private, writable home: `HOME` and
/// the XDG folders point into it (an agent CLI keeps its session and config there).
/// With `api`, the CLI's model API is served by plangate for it (the real
/// key stays here; see [`crate::egress::api`]).
pub(crate) async fn run_with_home(
    mut spec: ProcessSpec,
    ctx: &StepContext,
    home: &std::path::Path,
    api: Option<&crate::egress::api::Serve>,
) -> std::io::Result<Guarded> {
    let at = |sub: &str| home.join(sub).display().to_string();
    for (var, sub) in [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
    ] {
        std::fs::create_dir_all(home.join(sub))?;
        spec.env.retain(|(k, _)| k != var);
        spec.env.push((var.to_owned(), at(sub)));
    }
    spec.env.retain(|(k, _)| k != "HOME");
    spec.env
        .push(("HOME".to_owned(), home.display().to_string()));
    if api.is_some_and(|a| a.provider == crate::egress::api::Provider::Gemini) {
        gemini_settings(home)?;
    }
    run_in(spec, ctx, None, Some(home), api).await
}

/// Gemini CLI (0.6x) reads `GOOGLE_GEMINI_BASE_URL` as a "gateway", an auth
/// type its headless mode then refuses ("Invalid auth method selected"):
/// user settings in the fresh private home select the API-key auth, which
/// still sends its calls to that base URL (plangate's endpoint), and turn
/// its usage statistics off (the allow-list would refuse them). Not system
/// settings: Gemini CLI skips a system settings file below a world-writable
/// folder such as `/tmp`.
fn gemini_settings(home: &std::path::Path) -> std::io::Result<()> {
    let dir = home.join(".gemini");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("settings.json"),
        br#"{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}}"#,
    )?;
    Ok(())
}

async fn run_in(
    mut spec: ProcessSpec,
    ctx: &StepContext,
    limits: Option<Limits>,
    home: Option<&std::path::Path>,
    api: Option<&crate::egress::api::Serve>,
) -> std::io::Result<Guarded> {
    // Fail-close: a process-running step always has a sandbox decision.
    let Some(sb) = ctx.sandbox.as_ref() else {
        return Err(std::io::Error::other(
            "no sandbox was decided for this step; it is not run",
        ));
    };
    // A step that may change `.git` waits for the guarded ones (and they
    // for it): their snapshots must never undo its changes.
    let guarded = sb.profile.filesystem != Filesystem::Declared;
    let _lane = git_guard::LOCK
        .enter(if guarded {
            git_guard::Side::Guarded
        } else {
            git_guard::Side::Writer
        })
        .await;
    std::fs::create_dir_all(&ctx.artifacts_dir)?;
    let temp = super::temp::StepTemp::new()?;
    // A sandboxed read-only step can change nothing in the workspace: no
    // `.git` to record and put back, no nested repository to look for.
    let watched = guarded && !sealed_read_only(sb, ctx, home, temp.path());
    let snapshot = if watched {
        Some(take_snapshot(sb, ctx).await?)
    } else {
        None
    };
    if guarded {
        // `git status` would rewrite the index to refresh it: not in a guarded step.
        spec.env.retain(|(k, _)| k != "GIT_OPTIONAL_LOCKS");
        spec.env
            .push(("GIT_OPTIONAL_LOCKS".to_owned(), "0".to_owned()));
    }
    for var in ["TMPDIR", "TMP", "TEMP"] {
        spec.env
            .push((var.to_owned(), temp.path().display().to_string()));
    }
    // The supervisor inside the sandbox counts what the step leaves behind here.
    let report = temp.path().join(SUPERVISOR_REPORT);
    let kill_grace_ms = u64::try_from(spec.kill_grace.as_millis()).unwrap_or(u64::MAX);
    let mut supervised = false;
    // A resident bwrap sandbox's spec (run through [`run_walled`]).
    let mut walled: Option<process::lane::LaneSpec> = None;
    // The step's egress proxy (and, under bwrap, the folder of its socket).
    let mut egress: Option<(EgressProxy, sandbox::EgressAt)> = None;
    let Hidden {
        hidden,
        denied,
        extra_readable,
        notes,
    } = hidden_for(ctx, sb).await?;
    check_egress(sb, api)?;
    if let Some(backend) = sb.backend() {
        supervised = true;
        if backend == crate::model::Backend::Landlock && home.is_none() {
            unreadable_home_git(&mut spec, &sb.profile);
        }
        if let Some(list) = &sb.profile.egress {
            let (p, at) = start_egress(list, api, backend, ctx).await?;
            egress_env(&mut spec, &at, api);
            egress = Some((p, at));
        }
        let layout = Layout {
            workspace: ctx.env.workspace.clone(),
            out_dir: ctx.out_dir.clone(),
            artifacts: ctx.artifacts_dir.clone(),
            temp: temp.path().to_path_buf(),
            cwd: spec.cwd.clone(),
            extra: home.map(std::path::Path::to_path_buf).into_iter().collect(),
            extra_readable,
            hidden,
            profile: sb.profile.clone(),
            report: report.clone(),
            kill_grace_ms,
            egress: egress.as_ref().map(|(_, at)| at.clone()),
        };
        walled = route(&mut spec, backend, &layout, ctx, home, limits.as_ref())?;
    } else if ctx.overlay.is_none() && lane_fits(&spec, limits.as_ref()) {
        // Unsandboxed: a resident supervisor still kills what the step leaves.
        supervised = true;
        spec.lane = Some(lane_spec(None));
    }
    wrap_outside(&mut spec, ctx, supervised, limits, &report, kill_grace_ms);
    if spec.lane.is_none() && walled.is_none() {
        let _ = std::fs::remove_file(&report);
    }
    // The kernel's file clock before the step: what it creates is not older.
    let since = if watched {
        Some(sandbox::git_nested::stamp(temp.path())?)
    } else {
        None
    };
    let laned = spec.lane.is_some() || walled.is_some();
    let mut withheld = Vec::new();
    let result = match walled {
        Some(w) => {
            let (r, kept_out) = run_walled(spec, w, ctx).await;
            withheld = kept_out;
            r
        }
        None => process::run(spec, ctx.cancel.clone()).await,
    };
    if let Some((p, _)) = egress {
        p.stop();
    }
    let lingering = if laned {
        result.as_ref().ok().and_then(|o| o.lingering)
    } else {
        std::fs::read_to_string(&report)
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
    };
    // Landlock cannot keep a step that may write the workspace out of the
    // names beneath it (rights granted on a folder hold for all it holds):
    // what the rules deny is compared instead (bwrap binds it read-only).
    let touched_denied = denied
        .map(|(paths, before)| crate::denied::changed(&ctx.env.workspace, &paths, &before))
        .unwrap_or_default();
    // Undo even when the process could not be waited for: it may have run.
    let after = after_step(snapshot, since, ctx).await;
    // Every process of the step is gone when its supervisor answered.
    temp.finish(result.is_ok() && lingering.is_some());
    let (undone, nested) = after?;
    Ok(Guarded {
        process: result?,
        undone,
        nested,
        lingering,
        withheld,
        touched_denied,
        notes,
    })
}

/// What wraps the step's command from outside: the helper that supervises
/// an unsupervised step (and sets the limits, if any), then, outermost, a
/// staged overlay's namespaces holding the sandbox and the step.
fn wrap_outside(
    spec: &mut ProcessSpec,
    ctx: &StepContext,
    supervised: bool,
    limits: Option<Limits>,
    report: &std::path::Path,
    kill_grace_ms: u64,
) {
    if !supervised || (limits.is_some() && spec.lane.is_none()) {
        let extra = if supervised {
            Vec::new()
        } else {
            sandbox::supervisor_args(report, kill_grace_ms)
        };
        let (program, args) = (
            std::mem::take(&mut spec.program),
            std::mem::take(&mut spec.args),
        );
        (spec.program, spec.args) =
            sandbox::with_limits(&limits.unwrap_or_default(), extra, program, args);
    }
    if let Some(o) = &ctx.overlay {
        let (program, args) = (
            std::mem::take(&mut spec.program),
            std::mem::take(&mut spec.args),
        );
        (spec.program, spec.args) = sandbox::overlay::wrap(o, program, args);
    }
}

/// How a sandboxed step starts: through a resident bwrap sandbox (the spec
/// returned), through a resident supervisor that confines it with Landlock
/// (`spec.lane`), or wrapped in its backend's command line. A staged overlay
/// is mounted by the helper in the step's own namespaces: never in a
/// resident supervisor.
fn route(
    spec: &mut ProcessSpec,
    backend: crate::model::Backend,
    layout: &Layout,
    ctx: &StepContext,
    home: Option<&std::path::Path>,
    limits: Option<&Limits>,
) -> std::io::Result<Option<process::lane::LaneSpec>> {
    if backend == crate::model::Backend::Bwrap
        && ctx.overlay.is_none()
        && home.is_none()
        && limits.is_none()
        && let Some(w) = walled_fits(spec, ctx, layout)
    {
        return Ok(Some(w));
    }
    if backend == crate::model::Backend::Landlock
        && ctx.overlay.is_none()
        && lane_fits(spec, limits)
    {
        // A resident supervisor confines the thread that spawns the step.
        let flags = sandbox::confine_flags(layout).map_err(std::io::Error::other)?;
        spec.lane = Some(lane_spec(Some(flags)));
    } else {
        (spec.program, spec.args) = sandbox::wrap(backend, layout, &spec.program, &spec.args)
            .map_err(std::io::Error::other)?;
    }
    Ok(None)
}

/// Whether the step can run through a resident bwrap sandbox (a walled
/// [`process::lane`]), and its spec: no resource limits, no egress, a
/// command line and environment that fit one message, name the step's
/// artifact folder only as the value of a variable (it is seen elsewhere
/// inside: see [`run_walled`]) and do not name the output folder, and an
/// output folder on the file system of the artifact folder.
fn walled_fits(
    spec: &ProcessSpec,
    ctx: &StepContext,
    layout: &Layout,
) -> Option<process::lane::LaneSpec> {
    use std::os::unix::fs::MetadataExt as _;
    if !lane_fits(spec, None) || !walled_lanes_enabled() {
        return None;
    }
    let art = ctx.artifacts_dir.display().to_string();
    let out = ctx.out_dir.display().to_string();
    let named_inside = |v: &str| v.contains(&art) && !v.starts_with(&art);
    // A command that names the output folder (or `$PLANGATE_OUT_DIR`) may
    // reach its artifact folder that way: the per-step sandbox binds it.
    let names_out = |a: &String| a.contains(&out) || a.contains("PLANGATE_OUT_DIR");
    if spec.program.contains(&out)
        || spec.args.iter().any(names_out)
        || spec.env.iter().any(|(_, v)| named_inside(v))
    {
        return None;
    }
    let dev = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    if dev(&ctx.out_dir).is_none() || dev(&ctx.out_dir) != dev(&ctx.artifacts_dir) {
        return None;
    }
    sandbox::walled_lane(layout, own_exe())
}

/// Whether walled lanes may be used: the self-test ran the probe through
/// one and it held what the per-step sandbox holds, and
/// `PLANGATE_BWRAP_LANES=0` does not turn them off.
fn walled_lanes_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    sandbox::walled_usable()
        && *ON.get_or_init(|| crate::environ::var("PLANGATE_BWRAP_LANES").as_deref() != Some("0"))
}

/// Run `spec` through a resident bwrap sandbox of its layout (`w`).
///
/// The lane's sandbox binds its own artifact folder and TMPDIR (made with
/// the lane), not the step's: the step's variables that name its artifact
/// folder (`PLANGATE_STEP_ARTIFACTS`, `PLANGATE_OUTPUT`, `PLANGATE_REQUESTS`,
/// any under it) name the lane's instead, and `TMPDIR`/`TMP`/`TEMP` the
/// lane's TMPDIR. What the artifact folder holds is moved into the lane's
/// before the step, and what the lane's holds back after it, once every
/// process of the step is gone (the lane said so, or its whole sandbox was
/// ended), before anything looks at it; the lane's TMPDIR is emptied. A
/// name the step wrote that plangate meanwhile made in the real folder (its
/// own capture files) is withheld (removed) and returned. A lane that
/// cannot be left as it was made is ended, never reused.
async fn run_walled(
    mut spec: ProcessSpec,
    w: process::lane::LaneSpec,
    ctx: &StepContext,
) -> (std::io::Result<ProcessOutcome>, Vec<String>) {
    let mut ln = match process::lane::take(&w) {
        Ok(l) => l,
        Err(e) => return (Err(e), Vec::new()),
    };
    let Some(st) = ln.staging() else {
        return (
            Err(std::io::Error::other("the step's sandbox has no folders")),
            Vec::new(),
        );
    };
    let (lane_art, lane_tmp) = (st.artifacts().to_path_buf(), st.temp().to_path_buf());
    let real = ctx.artifacts_dir.clone();
    let real_s = real.display().to_string();
    for (k, v) in &mut spec.env {
        if ["TMPDIR", "TMP", "TEMP"].contains(&k.as_str()) {
            *v = lane_tmp.display().to_string();
        } else if let Some(rest) = v.strip_prefix(&real_s)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            *v = format!("{}{rest}", lane_art.display());
        }
    }
    let moved_in = match move_entries(&real, &lane_art, &[]) {
        Ok(m) => m.moved,
        Err(e) => {
            // Nothing ran: what was moved goes back.
            let _ = move_entries(&lane_art, &real, &[]);
            drop(ln);
            return (
                Err(std::io::Error::other(format!(
                    "cannot prepare the step's artifact folder in its sandbox: {e}; the step was not run"
                ))),
                Vec::new(),
            );
        }
    };
    let result = process::run_on(spec, w.confine.clone(), &ln, ctx.cancel.clone()).await;
    let answered = result.as_ref().is_ok_and(|o| o.lingering.is_some());
    // Every process of the step is gone: the lane said so, or its sandbox ended.
    let gone = answered || ln.end();
    if !gone {
        // Something of the step may still run: nothing it wrote is taken.
        return (result, Vec::new());
    }
    let withheld = match move_entries(&lane_art, &real, &moved_in) {
        Ok(m) => m.taken,
        Err(e) => {
            ln.end();
            let e = std::io::Error::other(format!(
                "cannot move what the step wrote into its artifact folder: {e}"
            ));
            return (result.and(Err(e)), Vec::new());
        }
    };
    let reusable = answered
        && ln.clean()
        && empty_folder(&lane_tmp)
        && is_empty(&lane_art)
        && ln.staging().is_some_and(process::lane::Staging::intact);
    if reusable {
        process::lane::give_back(ln);
    } else {
        ln.end();
    }
    (result, withheld)
}

/// What [`move_entries`] did.
struct Moved {
    /// Each entry moved: its name, device and inode.
    moved: Vec<(std::ffi::OsString, u64, u64)>,
    /// The names taken in the destination that the step wrote (removed).
    taken: Vec<String>,
}

/// Rename every entry of `from` into `to`, never over an entry there. A
/// name taken in `to` (plangate's own capture files, made there while the
/// step ran): the entry of `from` is removed; unless it is one of `before`
/// (moved in before the step, the very inode: an earlier run's or attempt's
/// file, which plangate's new one replaces as it would in place), its name
/// is returned in [`Moved::taken`].
fn move_entries(
    from: &std::path::Path,
    to: &std::path::Path,
    before: &[(std::ffi::OsString, u64, u64)],
) -> std::io::Result<Moved> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    use std::os::unix::fs::MetadataExt as _;
    let mut done = Moved {
        moved: Vec::new(),
        taken: Vec::new(),
    };
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let name = e.file_name();
        let m = std::fs::symlink_metadata(e.path())?;
        let id = (name.clone(), m.dev(), m.ino());
        let rename = || {
            renameat_with(
                CWD,
                from.join(&name),
                CWD,
                to.join(&name),
                RenameFlags::NOREPLACE,
            )
        };
        let mut renamed = rename();
        if renamed == Err(rustix::io::Errno::ACCESS) && m.is_dir() {
            // A folder moved to another parent rewrites its `..`: the step
            // may have left it read-only (a module cache). Writable for the
            // move, then its mode again.
            use std::os::unix::fs::PermissionsExt as _;
            let p = from.join(&name);
            let mode = m.permissions().mode();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode | 0o200))?;
            renamed = rename();
            let at = if renamed.is_ok() { to.join(&name) } else { p };
            std::fs::set_permissions(at, std::fs::Permissions::from_mode(mode))?;
        }
        match renamed {
            Ok(()) => done.moved.push(id),
            Err(rustix::io::Errno::EXIST) => {
                remove_entry(&from.join(&name))?;
                if !before.contains(&id) {
                    done.taken.push(name.to_string_lossy().into_owned());
                }
            }
            Err(err) => return Err(err.into()),
        }
    }
    Ok(done)
}

/// Remove `p` (a folder with everything in it; a link, not what it points to).
fn remove_entry(p: &std::path::Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(p)?.is_dir() {
        std::fs::remove_dir_all(p)
    } else {
        std::fs::remove_file(p)
    }
}

/// Empty the folder `dir`; whether it is empty now.
fn empty_folder(dir: &std::path::Path) -> bool {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let _ = remove_entry(&e.path());
        }
    }
    is_empty(dir)
}

fn is_empty(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none())
}

/// plangate's own binary, looked up once a run (a readlink of
/// `/proc/self/exe` a step otherwise).
fn own_exe() -> &'static str {
    static EXE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        std::env::current_exe().map_or_else(|_| "plangate".to_owned(), |p| p.display().to_string())
    })
}

/// A step's running egress proxy (and model API endpoint).
struct EgressProxy {
    proxies: Vec<crate::egress::proxy::Proxy>,
    /// bwrap: the private folder of their sockets (removed when dropped).
    dir: Option<tempfile::TempDir>,
}

impl EgressProxy {
    fn stop(self) {
        for p in self.proxies {
            p.stop();
        }
        drop(self.dir);
    }
}

/// Start the step's egress proxy (and, for an agent with `api`, its model
/// API endpoint): unix sockets in a private folder (bwrap, which binds them
/// in and runs the forwarder), or ports on 127.0.0.1 (Landlock).
async fn start_egress(
    list: &[String],
    api: Option<&crate::egress::api::Serve>,
    backend: crate::model::Backend,
    ctx: &StepContext,
) -> std::io::Result<(EgressProxy, sandbox::EgressAt)> {
    use crate::egress::proxy::{Endpoint, Handler, Proxy};
    let rules = crate::egress::Rules::parse(list).map_err(std::io::Error::other)?;
    let notify: crate::egress::Notify = match &ctx.on_egress {
        Some(n) => n.0.clone(),
        None => std::sync::Arc::new(|_| {}),
    };
    let fail = |e: std::io::Error| {
        std::io::Error::other(format!(
            "cannot start the step's egress proxy: {e}; the step was not run"
        ))
    };
    let mut handlers = vec![(Handler::Egress(rules), crate::egress::FORWARD_PORT)];
    if let Some(a) = api {
        handlers.push((Handler::Api(a.clone()), crate::egress::API_PORT));
    }
    let mut proxies = Vec::new();
    match backend {
        crate::model::Backend::Bwrap => {
            let dir = tempfile::Builder::new()
                .prefix("plangate-egress-")
                .tempdir()
                .map_err(fail)?;
            let mut routes = Vec::new();
            for (i, (h, port)) in handlers.into_iter().enumerate() {
                let sock = dir.path().join(format!("{i}.sock"));
                proxies.push(
                    Proxy::start(h, Some(&sock), notify.clone())
                        .await
                        .map_err(fail)?,
                );
                routes.push((sock, port));
            }
            let at = sandbox::EgressAt::Sockets(routes);
            Ok((
                EgressProxy {
                    proxies,
                    dir: Some(dir),
                },
                at,
            ))
        }
        crate::model::Backend::Landlock => {
            let mut ports = Vec::new();
            for (h, _) in handlers {
                let p = Proxy::start(h, None, notify.clone()).await.map_err(fail)?;
                let Endpoint::Tcp(port) = *p.endpoint() else {
                    return Err(fail(std::io::Error::other("no TCP port")));
                };
                proxies.push(p);
                ports.push(port);
            }
            let at = sandbox::EgressAt::Ports(ports);
            Ok((EgressProxy { proxies, dir: None }, at))
        }
    }
}

/// Name the proxy (the first route) in the process's environment, and the
/// model API endpoint (the second, if any) in the CLI's base-URL variable,
/// which then is the only `NO_PROXY` host.
fn egress_env(
    spec: &mut ProcessSpec,
    at: &sandbox::EgressAt,
    api: Option<&crate::egress::api::Serve>,
) {
    let ports: Vec<u16> = match at {
        sandbox::EgressAt::Sockets(r) => r.iter().map(|(_, p)| *p).collect(),
        sandbox::EgressAt::Ports(p) => p.clone(),
    };
    let url = |port: u16| format!("http://127.0.0.1:{port}");
    let proxy = url(ports.first().copied().unwrap_or(0));
    spec.env.retain(|(k, _)| {
        !crate::egress::PROXY_VARS.contains(&k.as_str()) && !k.eq_ignore_ascii_case("no_proxy")
    });
    for var in crate::egress::PROXY_VARS {
        spec.env.push((var.to_owned(), proxy.clone()));
    }
    if let (Some(a), Some(port)) = (api, ports.get(1)) {
        let var = a.provider.base_url_var();
        let endpoint = format!("{}{}", url(*port), a.base_path());
        spec.env.retain(|(k, _)| k != var);
        spec.env.push((var.to_owned(), endpoint.clone()));
        for arg in &mut spec.args {
            if arg.contains(crate::format::agent::API_URL_SLOT) {
                *arg = arg.replace(crate::format::agent::API_URL_SLOT, &endpoint);
            }
        }
        for v in ["NO_PROXY", "no_proxy"] {
            spec.env
                .push((v.to_owned(), "127.0.0.1,localhost".to_owned()));
        }
    }
}

/// Fail-close: a model API endpoint needs an egress-confined sandbox, and an
/// egress list needs a sandbox to enforce it.
fn check_egress(
    sb: &crate::model::StepSandbox,
    api: Option<&crate::egress::api::Serve>,
) -> std::io::Result<()> {
    if api.is_some() && sb.profile.egress.is_none() {
        return Err(std::io::Error::other(
            "the agent's model API endpoint needs an egress-confined sandbox; it is not run",
        ));
    }
    if sb.profile.egress.is_some() && sb.backend().is_none() {
        return Err(std::io::Error::other(
            "the step declares `egress`, which only a sandbox can enforce, and it has none; it is not run",
        ));
    }
    Ok(())
}

/// What a sandboxed step may not read and may read besides the usual: the
/// paths the permission rules deny reading, which the sandbox hides, with
/// the git stores that hold such a path ([`git_store`]); the extra readable
/// paths but those stores; and why those stores are hidden. Nothing for a
/// step that runs unsandboxed.
async fn hidden_for(ctx: &StepContext, sb: &crate::model::StepSandbox) -> std::io::Result<Hidden> {
    let Some(judge) = ctx.judge.as_ref().filter(|_| sb.backend().is_some()) else {
        return Ok(Hidden {
            extra_readable: readable_extras(ctx),
            ..Hidden::default()
        });
    };
    let (ws, judge) = (ctx.env.workspace.clone(), std::sync::Arc::clone(judge));
    let shared = std::sync::Arc::clone(&ctx.shared);
    let writes = sb.profile.filesystem >= Filesystem::WorkspaceWrite;
    let (hidden, denied, stores) = super::in_place(move || {
        // What the rules deny, as it is before a step that may write.
        let (mut hidden, seen, stamps) = hidden_paths(&ws, &judge, writes)?;
        let denied = stamps.map(|s| (hidden.clone(), s));
        let stores = git_store::judge(&ws, &seen, &judge, &shared.git_stores);
        hidden.extend(stores.inside.iter().cloned());
        Ok::<_, String>((hidden, denied, stores))
    })
    .map_err(std::io::Error::other)?
    .map_err(std::io::Error::other)?;
    let extra_readable = readable_extras(ctx)
        .into_iter()
        .filter(|p| !stores.covers(p))
        .collect();
    Ok(Hidden {
        hidden,
        denied,
        extra_readable,
        notes: stores.notes,
    })
}

/// What a sandboxed step may not see, and what it may read besides.
#[derive(Default)]
struct Hidden {
    /// Hidden from the step: what the rules deny, and git object stores.
    hidden: Vec<PathBuf>,
    /// For a step that may write the workspace: the paths the rules deny
    /// and every entry beneath them as they were ([`crate::denied::stamps`]).
    denied: Option<(Vec<PathBuf>, crate::denied::Stamps)>,
    /// Readable besides the usual ([`readable_extras`]).
    extra_readable: Vec<PathBuf>,
    /// What the step is warned of.
    notes: Vec<String>,
}

/// Whether the step runs in a sandbox that lets it write nothing inside the
/// workspace: the `read-only` profile, no private home, and its artifact
/// folder and TMPDIR (both exist by then) outside the workspace. A path that
/// cannot be resolved counts as inside.
fn sealed_read_only(
    sb: &crate::model::StepSandbox,
    ctx: &StepContext,
    home: Option<&std::path::Path>,
    temp: &std::path::Path,
) -> bool {
    if sb.backend().is_none() || sb.profile.filesystem != Filesystem::ReadOnly || home.is_some() {
        return false;
    }
    let Ok(ws) = ctx.env.workspace.canonicalize() else {
        return false;
    };
    let outside = |p: &std::path::Path| p.canonicalize().is_ok_and(|real| !real.starts_with(&ws));
    outside(&ctx.artifacts_dir) && outside(temp)
}

/// Record `.git` before a guarded step: under bwrap it is bound read-only,
/// so the files that make git run code suffice; elsewhere all of it is
/// kept. With it the configuration files they include from the workspace,
/// and the nested git directories git would use (see [`after_step`]).
async fn take_snapshot(
    sb: &crate::model::StepSandbox,
    ctx: &StepContext,
) -> std::io::Result<(Snapshot, sandbox::git_nested::Before)> {
    let scope = if sb.backend() == Some(crate::model::Backend::Bwrap) {
        Scope::Code
    } else {
        Scope::Whole
    };
    let ws = ctx.env.workspace.clone();
    let skip = nested_skip(ctx);
    super::in_place(move || {
        let before = sandbox::git_nested::survey(&ws, &skip)?;
        let snapshot = Snapshot::take(&ws, scope, &before.configs())?;
        Ok::<_, std::io::Error>((snapshot, before))
    })
    .map_err(std::io::Error::other)?
    .map_err(|e| {
        std::io::Error::other(format!(
            "cannot record the repository's `.git` before the step: {e}; the step was not run"
        ))
    })
}

/// What the nested-repository walk leaves out: the workspace's own git
/// directories (guarded by the snapshot) and the run's output folder.
fn nested_skip(ctx: &StepContext) -> Vec<std::path::PathBuf> {
    let ws = &ctx.env.workspace;
    let mut skip: Vec<std::path::PathBuf> = git_guard::git_dirs(ws)
        .into_iter()
        .map(|r| ws.join(r))
        .collect();
    skip.push(ctx.out_dir.clone());
    skip
}

/// After a guarded step: what it changed in `.git` and in the configuration
/// files it includes (undone), and the risky parts of the nested
/// repositories it left (removed).
async fn after_step(
    snapshot: Option<(Snapshot, sandbox::git_nested::Before)>,
    since: Option<sandbox::git_nested::Stamp>,
    ctx: &StepContext,
) -> std::io::Result<(Vec<String>, Vec<String>)> {
    let (snapshot, before) = match snapshot {
        Some((s, b)) => (Some(s), b),
        None => (None, sandbox::git_nested::Before::default()),
    };
    let undone = match snapshot {
        Some(s) => super::in_place(move || s.undo_changes())
            .map_err(std::io::Error::other)?
            .map_err(|e| {
                std::io::Error::other(format!(
                    "cannot put back the repository's `.git` after the step: {e}"
                ))
            })?,
        None => Vec::new(),
    };
    let nested = match since {
        Some(since) => {
            let ws = ctx.env.workspace.clone();
            let skip = nested_skip(ctx);
            super::in_place(move || sandbox::git_nested::sweep(&ws, &skip, since, &before))
                .map_err(std::io::Error::other)?
                .map_err(|e| {
                    std::io::Error::other(format!(
                        "cannot check the git repositories the step may have left: {e}"
                    ))
                })?
        }
        None => Vec::new(),
    };
    Ok((undone, nested))
}

/// Whether `spec` can run through a resident supervisor ([`process::lane`]):
/// no resource limits (they are per process: the per-step helper sets
/// them), and a command line and environment that fit one message.
fn lane_fits(spec: &ProcessSpec, limits: Option<&Limits>) -> bool {
    let size: usize = spec.args.iter().map(String::len).sum::<usize>()
        + spec
            .env
            .iter()
            .map(|(k, v)| k.len() + v.len() + 8)
            .sum::<usize>()
        + spec.program.len();
    limits.is_none() && size < process::lane::MAX_MESSAGE / 2
}

fn lane_spec(confine: Option<Vec<String>>) -> process::lane::LaneSpec {
    process::lane::LaneSpec {
        program: own_exe().to_owned(),
        args: vec!["__sandbox-lane".to_owned()],
        confine,
        walled: None,
    }
}

/// The supervisor's report file, in the step's private temporary folder.
const SUPERVISOR_REPORT: &str = ".plangate-supervisor";
