//! Permission rules applied to the paths a step really touches: what it
//! declares before it runs ([`needs`], with symlinks resolved) and, for the
//! paths only known at run time (a search's files, a repository's changes,
//! an agent's context files), [`PathJudge`], which judges each one as
//! written and where it resolves through links.
//!
//! The rules themselves (matching, priorities, default deny) are
//! `policy::permissions`; this module only decides which paths they see.

use std::path::{Component, Path, PathBuf};

use super::ToolEnv;
use super::step::Step;
use crate::model::{EffectivePolicy, Level, Risk, ToolName, Verdict};
use crate::policy::permissions::{self, Access, Compiled};

/// Each part of a step with the tool whose rules judge it and what it needs:
/// the step's own action, then its `rollback_command` (judged as bash:
/// execute on the workspace, where rollbacks run). A path that is a symlink
/// in the workspace needs the same level on where it resolves.
pub(crate) fn needs(step: &Step, env: &ToolEnv, effective: Risk) -> Vec<(ToolName, Vec<Access>)> {
    let own = permissions::needs(step.action.spec().needs(), effective);
    let mut out = vec![(step.tool, with_links(own, &env.workspace))];
    if let Some(rb) = step.rollback_command.as_deref() {
        let ctx = crate::policy::classify::ClassifyContext {
            workspace: &env.workspace,
            working_dir: &env.workspace,
            home: env.home.as_deref(),
        };
        let risk = crate::policy::classify::classify_bash(rb, &ctx)
            .risk()
            .max(step.declared_risk);
        let access = vec![super::spec::access(".", Level::Execute)];
        out.push((ToolName::Bash, permissions::needs(access, risk)));
    }
    out
}

/// The verdict on every part of a step (None without any `permissions:` list).
pub(crate) fn verdict(
    step: &Step,
    env: &ToolEnv,
    policy: &EffectivePolicy,
    effective: Risk,
) -> Option<Verdict> {
    let lists = policy.permission_lists();
    if lists.is_empty() {
        return None;
    }
    let verdicts = needs(step, env, effective)
        .into_iter()
        .filter_map(|(tool, n)| permissions::evaluate(&lists, tool.as_str(), &n, effective))
        .collect();
    permissions::combine(verdicts)
}

/// Add, for every path resource that is reached through a symlink inside the
/// workspace, the same need on the path it resolves to.
fn with_links(needs: Vec<Access>, workspace: &Path) -> Vec<Access> {
    let mut out = Vec::with_capacity(needs.len());
    for n in needs {
        let resolved = path_resource(&n.resource)
            .and_then(|rel| resolved_rel(workspace, &workspace.join(rel)))
            .filter(|r| *r != n.resource);
        let level = n.level;
        out.push(n);
        if let Some(r) = resolved {
            out.push(super::spec::access(r, level));
        }
    }
    out
}

/// A resource that names a workspace path (not `*`, a URL, `agent:` or `system`).
fn path_resource(resource: &str) -> Option<&str> {
    let not_path =
        resource == "*" || resource == "system" || resource.contains(':') || resource.is_empty();
    (!not_path).then_some(resource)
}

/// Where `abs` resolves, relative to the workspace (`.` for the workspace
/// itself); the longest existing prefix is resolved and the rest appended.
/// None when it resolves outside the workspace (the tools refuse that).
fn resolved_rel(workspace: &Path, abs: &Path) -> Option<String> {
    let mut existing = abs.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let real = loop {
        match existing.canonicalize() {
            Ok(r) => break r,
            Err(_) => {
                rest.push(existing.file_name()?.to_owned());
                if !existing.pop() {
                    return None;
                }
            }
        }
    };
    let mut full = real;
    for part in rest.iter().rev() {
        full.push(part);
    }
    let rel = full.strip_prefix(workspace).ok()?;
    Some(super::spec::resource(rel))
}

/// The permission rules in force for one running step, judging paths found
/// at run time. Built only when a `permissions:` list is in force.
#[derive(Debug, Clone)]
pub(crate) struct PathJudge {
    workspace: PathBuf,
    tool: ToolName,
    risk: Risk,
    lists: Vec<Compiled>,
}

impl PathJudge {
    /// The judge of a step of `tool` at `risk` (None: no list in force).
    pub(crate) fn new(
        workspace: &Path,
        tool: ToolName,
        risk: Risk,
        policy: &EffectivePolicy,
    ) -> Option<PathJudge> {
        let lists = policy.permission_lists();
        if lists.is_empty() {
            return None;
        }
        Some(PathJudge {
            workspace: workspace.to_path_buf(),
            tool,
            risk,
            lists: lists.iter().map(Compiled::new).collect(),
        })
    }

    /// Whether `path` (absolute, or relative to the workspace) may be used at
    /// `level`: as written and where it resolves through symlinks. `Err`
    /// holds the reason (it names the rule and the path, never the content).
    pub(crate) fn check(&self, path: &Path, level: Level) -> Result<(), String> {
        let abs = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.workspace.join(path)
        };
        let mut resources = Vec::with_capacity(2);
        if let Some(rel) = lexical_rel(&self.workspace, &abs) {
            resources.push(rel);
        }
        if let Some(real) = resolved_rel(&self.workspace, &abs)
            && !resources.contains(&real)
        {
            resources.push(real);
        }
        if resources.is_empty() {
            return Err(format!("`{}` is outside the workspace", abs.display()));
        }
        let needs: Vec<Access> = resources
            .into_iter()
            .map(|r| super::spec::access(r, level))
            .collect();
        self.verdict(&needs)?;
        same_as_denied(&abs, std::fs::metadata(&abs))
    }

    /// Like [`PathJudge::check`] for a path known to hold no symlink (an
    /// entry of a walk that follows none, under a resolved root): judged by name only.
    pub(crate) fn check_real(&self, abs: &Path, level: Level) -> Result<(), String> {
        let Some(rel) = lexical_rel(&self.workspace, abs) else {
            return Err(format!("`{}` is outside the workspace", abs.display()));
        };
        self.verdict(&[super::spec::access(rel, level)])?;
        same_as_denied(abs, std::fs::symlink_metadata(abs))
    }

    /// Whether the path `rel` (relative to whichever copy of the workspace is
    /// being looked at: the workspace or an agent's staged copy) may be used
    /// at `level`, by name only.
    pub(crate) fn check_rel(&self, rel: &Path, level: Level) -> Result<(), String> {
        self.verdict(&[super::spec::access(super::spec::resource(rel), level)])
    }

    /// The same rules, judged for `tool` (a rollback command is judged as bash).
    pub(crate) fn for_tool(&self, tool: ToolName) -> PathJudge {
        PathJudge {
            tool,
            ..self.clone()
        }
    }

    /// Which rules these are within a run: the tool's, at the risk (the policy is the run's).
    pub(crate) fn key(&self) -> (ToolName, Risk) {
        (self.tool, self.risk)
    }

    fn verdict(&self, needs: &[Access]) -> Result<(), String> {
        let v = permissions::evaluate_compiled(&self.lists, self.tool.as_str(), needs, self.risk);
        if v.allowed { Ok(()) } else { Err(v.reason) }
    }
}

/// Refuse a file that is another name of one the rules deny reading
/// ([`crate::denied`]): a hard link to it, or the file renamed.
fn same_as_denied(abs: &Path, meta: std::io::Result<std::fs::Metadata>) -> Result<(), String> {
    match meta {
        Ok(m) if crate::denied::is_denied(&m) => {
            Err(format!("`{}`: {}", abs.display(), crate::denied::WHY))
        }
        _ => Ok(()),
    }
}

/// `abs` relative to the workspace, `..` and `.` resolved by name (None: outside).
fn lexical_rel(workspace: &Path, abs: &Path) -> Option<String> {
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    let rel = out.strip_prefix(workspace).ok()?;
    Some(super::spec::resource(rel))
}
