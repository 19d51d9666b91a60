//! A step's risk from its parameters, its rollback command and what it
//! declares about its sandbox (the engine's `decide_all` consumes it).

use std::path::Path;

use super::spec::ToolEnv;
use super::step::Step;
use crate::model::Risk;
use crate::policy::StepClassification;

/// Classify a step's concrete parameters and its rollback command: the
/// rollback runs unattended too, so the higher risk (or a block) wins. Where
/// its declared secrets would go is judged here (`secret_hosts`); whether
/// they are set is not ([`missing_secrets`]).
pub(crate) fn classify(step: &Step, env: &ToolEnv) -> StepClassification {
    let mut c = step.action.spec().classify(env);
    let ctx = crate::policy::classify::ClassifyContext {
        workspace: &env.workspace,
        working_dir: &env.workspace,
        home: env.home.as_deref(),
    };
    if let Some(rb) = step.rollback_command.as_deref() {
        let r = crate::policy::classify::classify_bash(rb, &ctx);
        merge(&mut c, &r, "rollback_command");
    }
    // The step's `env:` is in every process it starts: judged as the same
    // assignments in a command would be (`BASH_ENV`, `LD_PRELOAD`, `PATH`,
    // `LESSOPEN`, `GIT_SSH_COMMAND`, ...).
    if !step.env.is_empty() {
        let quote = |v: &str| format!("'{}'", v.replace('\'', "'\\''"));
        let exports: Vec<String> = (step.env.iter())
            .map(|(k, v)| format!("export {}={}", quote(k), quote(v)))
            .collect();
        let r = crate::policy::classify::classify_bash(&exports.join("\n"), &ctx);
        merge(&mut c, &r, "env");
    }
    if let Some(req) = step.sandbox_request(&env.workspace, env.home.as_deref()) {
        floor_for_sandbox(&mut c, &req, &env.workspace, env.home.as_deref());
    }
    // A declared secret sent to a host the operator's policy does not allow.
    super::secret_hosts::floor(step, env, &mut c);
    c
}

/// Raise `c` to what `r` (a part of the step named `what`) found.
fn merge(c: &mut StepClassification, r: &crate::policy::classify::Classification, what: &str) {
    if c.blocked.is_none() {
        c.blocked = r.blocked().map(|w| format!("{what}: {w}"));
    }
    if c.unclassifiable.is_none() {
        c.unclassifiable = r.unclassifiable().map(|w| format!("{what}: {w}"));
    }
    if r.risk() > c.classified {
        c.classified = r.risk();
        c.reason = format!("{what}: {}", r.reason());
    }
}

/// Whether reading `p` reaches credentials: `$HOME` itself or a folder above
/// it, a credential folder in it, or the runtime folders (sockets).
fn sensitive_read(p: &Path, home: Option<&Path>) -> bool {
    let above = |dir: &Path| dir.starts_with(p);
    if above(Path::new("/home")) || above(Path::new("/root")) || above(Path::new("/run")) {
        return true;
    }
    if p.starts_with("/run") || p.starts_with("/var/run") || p.starts_with("/proc") {
        return true;
    }
    let Some(home) = home else {
        return false;
    };
    if above(home) {
        return true;
    }
    [
        ".ssh",
        ".aws",
        ".gnupg",
        ".docker",
        ".kube",
        ".config",
        ".git-credentials",
        ".netrc",
    ]
    .iter()
    .any(|d| {
        let d = home.join(d);
        p.starts_with(&d) || d.starts_with(p)
    })
}

/// What a step declares about its sandbox raises its risk: the network to
/// moderate; a writable path inside the workspace to moderate, outside it to
/// dangerous; no sandbox at all to dangerous.
fn floor_for_sandbox(
    c: &mut StepClassification,
    req: &crate::sandbox::Request,
    workspace: &Path,
    home: Option<&Path>,
) {
    let mut raise = |risk: Risk, why: String| {
        if risk > c.classified.max(c.floor) {
            c.reason = why;
        }
        c.floor = c.floor.max(risk);
    };
    if req.network {
        raise(Risk::Moderate, "declares `network: true`".to_owned());
    }
    if let Some(hosts) = &req.egress {
        raise(
            Risk::Moderate,
            format!("reaches the network (`egress`: {})", hosts.join(", ")),
        );
    }
    for w in &req.writable {
        if w.starts_with(workspace) {
            raise(
                Risk::Moderate,
                format!("declares `{}` writable", w.display()),
            );
        } else {
            raise(
                Risk::Dangerous,
                format!(
                    "declares `{}` (outside the workspace) writable",
                    w.display()
                ),
            );
        }
    }
    for r in &req.readable {
        if sensitive_read(r, home) {
            raise(
                Risk::Dangerous,
                format!("declares `{}` readable", r.display()),
            );
        } else {
            raise(
                Risk::Moderate,
                format!(
                    "declares `{}` (outside the workspace) readable",
                    r.display()
                ),
            );
        }
    }
    if req.unsandboxed {
        raise(
            Risk::Dangerous,
            "asks to run without a sandbox (`sandbox: false`)".to_owned(),
        );
    }
}
