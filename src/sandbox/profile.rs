//! The approved risk level *is* the sandbox profile: what a step that runs a
//! process (a bash step, its rollback, an agent CLI) may do follows from the
//! risk it was approved at, not from what it asks for. The table is SPEC's
//! "Sandbox" (a test below holds it to [`plan_for`]): safe is `read-only`,
//! moderate `workspace-write`, dangerous `declared`; the network only with
//! `network: true`, which floors the risk at moderate.
//!
//! A dangerous step may also ask for no sandbox at all (bash `sandbox:
//! false`), honoured only when `allow_unsandboxed` is not false. When no
//! backend works here, `policy.sandbox: required` blocks the step (the
//! decision names the reason and the fix) and `optional` runs it marked
//! "not enforced"; under `--sandbox-backend none` the step is blocked
//! whatever `policy.sandbox` says.

use std::path::PathBuf;

use crate::model::{
    Availability, EffectivePolicy, Filesystem, Profile, Risk, SandboxMode, StepSandbox,
};

/// What a step that runs processes declares about its sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// `network: true` on the step (or its agent).
    pub network: bool,
    /// `sandbox: false`: asks to run without a sandbox (floors the risk at dangerous).
    pub unsandboxed: bool,
    /// `writable:` paths (absolute), granted when approved as dangerous.
    pub writable: Vec<PathBuf>,
    /// `readable:` paths (absolute), granted at any risk.
    pub readable: Vec<PathBuf>,
    /// `egress:` hosts (the step's or its agent's), reached through plangate's proxy only.
    pub egress: Option<Vec<String>>,
}

/// The sandbox of an approved step that runs processes, at `risk`; an error
/// (the reason it is blocked) when it cannot be had.
pub(crate) fn plan_for(
    request: &Request,
    risk: Risk,
    availability: Option<&Availability>,
    policy: &EffectivePolicy,
) -> Result<StepSandbox, String> {
    let filesystem = match risk {
        Risk::Safe => Filesystem::ReadOnly,
        Risk::Moderate => Filesystem::WorkspaceWrite,
        Risk::Dangerous => Filesystem::Declared,
    };
    let profile = Profile {
        filesystem,
        network: request.network,
        writable: if filesystem == Filesystem::Declared {
            request.writable.clone()
        } else {
            Vec::new()
        },
        readable: request.readable.clone(),
        egress: request.egress.clone(),
    };
    if request.network && !policy.allow_any_network {
        return Err("declares `network: true` (any host), which the policy does not allow (`allow_any_network` is not true in the `--policy` file); list the hosts it needs under `egress` instead".to_owned());
    }
    if request.network && request.egress.is_some() {
        return Err(
            "declares both `network: true` (any host) and an `egress` list; keep one".to_owned(),
        );
    }
    if request.unsandboxed && request.egress.is_some() {
        return Err("declares an `egress` list, which only a sandbox can enforce, and asks to run without one (`sandbox: false`)".to_owned());
    }
    if request.unsandboxed {
        if risk < Risk::Dangerous {
            // The classifier floors such a step at dangerous; never reached otherwise.
            return Err("asks to run without a sandbox (`sandbox: false`), which needs an approval at dangerous risk".to_owned());
        }
        if !policy.allow_unsandboxed {
            return Err("asks to run without a sandbox (`sandbox: false`), which the policy forbids (`allow_unsandboxed: false`); remove `sandbox: false` and list the paths it must write under `writable`".to_owned());
        }
        return Ok(StepSandbox::not_enforced(
            profile,
            "the step asks to run without a sandbox (`sandbox: false`) and was approved as dangerous".to_owned(),
        ));
    }
    if let Some(p) = profile
        .readable
        .iter()
        .chain(&profile.writable)
        .find(|p| super::git_creds::covers_state(p))
    {
        return Err(format!(
            "declares `{}` readable or writable, which holds (or lies in) plangate's private folder `{}` \
             (the git credentials withheld from the steps are kept there for the run); declare a narrower path",
            p.display(),
            super::git_creds::state_dir().display()
        ));
    }
    if let Some(backend) = availability.and_then(Availability::backend) {
        return Ok(StepSandbox::enforced(backend, profile));
    }
    let why = availability.map_or("the sandbox pre-flight did not run", |a| a.reason.as_str());
    if availability.is_some_and(Availability::is_switched_off) {
        // The operator's choice beats a `sandbox: optional` (plan or policy file).
        return Err(
            "--sandbox-backend none switched sandboxes off, so no step that asks for one runs \
             (not even under `sandbox: optional`); fix: choose a backend (`auto`, `bwrap`, `landlock`)"
                .to_owned(),
        );
    }
    match policy.sandbox {
        SandboxMode::Required => Err(format!(
            "no sandbox backend works here ({why}), and `policy.sandbox` is required, so no step that runs a process can be approved; \
             fix: install bubblewrap and allow unprivileged user namespaces (Ubuntu 24.04: `sysctl kernel.apparmor_restrict_unprivileged_userns=0`), \
             or run on Linux 6.2+ with Landlock enabled; or set `sandbox: optional` in the --policy file to run steps unenforced"
        )),
        SandboxMode::Optional if request.egress.is_some() => Err(format!(
            "declares an `egress` list, which only a sandbox can enforce, and no sandbox backend works here ({why})"
        )),
        SandboxMode::Optional => Ok(StepSandbox::not_enforced(
            profile,
            format!("no sandbox backend works here ({why}) and `policy.sandbox` is optional"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Backend;

    fn policy(mode: SandboxMode, allow: bool) -> EffectivePolicy {
        let mut p = crate::policy::cap::resolve(
            &crate::model::PolicyBlock::default(),
            crate::policy::cap::Overrides::default(),
            None,
        );
        p.sandbox = mode;
        p.allow_unsandboxed = allow;
        p.allow_any_network = true;
        p
    }

    #[test]
    fn risk_picks_the_filesystem_and_the_request_the_network() {
        let bwrap = Availability::with(Backend::Bwrap, "probe".into());
        let req = Request {
            network: true,
            unsandboxed: false,
            writable: vec![PathBuf::from("/opt/cache")],
            readable: vec![PathBuf::from("/opt/tools")],
            egress: None,
        };
        let p = policy(SandboxMode::Required, true);
        for (risk, fs, writable) in [
            (Risk::Safe, Filesystem::ReadOnly, 0),
            (Risk::Moderate, Filesystem::WorkspaceWrite, 0),
            (Risk::Dangerous, Filesystem::Declared, 1),
        ] {
            let s = plan_for(&req, risk, Some(&bwrap), &p).expect("sandbox");
            assert_eq!(s.profile.filesystem, fs);
            assert!(s.profile.network);
            assert_eq!(s.profile.writable.len(), writable);
            assert_eq!(s.profile.readable, vec![PathBuf::from("/opt/tools")]);
            assert_eq!(s.backend(), Some(Backend::Bwrap));
        }
    }

    #[test]
    fn no_backend_blocks_when_required_and_is_marked_when_optional() {
        let none = Availability::none("bwrap is missing".into());
        let req = Request::default();
        let err = plan_for(
            &req,
            Risk::Safe,
            Some(&none),
            &policy(SandboxMode::Required, true),
        )
        .expect_err("blocked");
        assert!(
            err.contains("bwrap is missing") && err.contains("sandbox: optional"),
            "{err}"
        );
        let s = plan_for(
            &req,
            Risk::Safe,
            Some(&none),
            &policy(SandboxMode::Optional, true),
        )
        .expect("optional");
        assert_eq!(s.enforcement, crate::model::sandbox::NOT_ENFORCED);
        assert!(s.backend().is_none());
        // `--sandbox-backend none` refuses the step whatever the mode; a step
        // that asks for no sandbox (allowed by the policy) is not asking for one.
        let off = Availability::switched_off("--sandbox-backend none".into());
        for mode in [SandboxMode::Optional, SandboxMode::Required] {
            for risk in [Risk::Safe, Risk::Moderate, Risk::Dangerous] {
                let err = plan_for(&req, risk, Some(&off), &policy(mode, true)).expect_err("off");
                assert!(err.contains("--sandbox-backend none"), "{err}");
            }
        }
        let bare = Request {
            unsandboxed: true,
            ..Request::default()
        };
        let p = policy(SandboxMode::Required, true);
        assert!(plan_for(&bare, Risk::Dangerous, Some(&off), &p).is_ok());
    }

    #[test]
    fn unsandboxed_needs_dangerous_and_the_policy() {
        let bwrap = Availability::with(Backend::Bwrap, "probe".into());
        let req = Request {
            unsandboxed: true,
            ..Request::default()
        };
        let p = policy(SandboxMode::Required, true);
        assert!(plan_for(&req, Risk::Moderate, Some(&bwrap), &p).is_err());
        let s = plan_for(&req, Risk::Dangerous, Some(&bwrap), &p).expect("allowed");
        assert!(s.backend().is_none());
        let p = policy(SandboxMode::Required, false);
        assert!(plan_for(&req, Risk::Dangerous, Some(&bwrap), &p).is_err());
    }

    /// SPEC's sandbox table: one row per risk, in order, naming the profile
    /// `plan_for` gives, mentioning `writable` only where it is granted, and
    /// listing the tolerances that run that risk unattended.
    #[test]
    fn specs_sandbox_table_is_plan_for() {
        let rows = crate::markdown::table_after(
            include_str!("../../docs/SPEC.md"),
            "<!-- sandbox-profiles: checked against src/sandbox/profile.rs by a test -->",
        );
        let bwrap = Availability::with(Backend::Bwrap, "probe".into());
        let req = Request {
            writable: vec![PathBuf::from("/opt/cache")],
            ..Request::default()
        };
        let p = policy(SandboxMode::Required, true);
        let risks = [Risk::Safe, Risk::Moderate, Risk::Dangerous];
        assert_eq!(rows.len(), risks.len(), "one row per risk: {rows:#?}");
        for (row, risk) in rows.iter().zip(risks) {
            let s = plan_for(&req, risk, Some(&bwrap), &p).expect("sandbox");
            use crate::model::Tolerance;
            let tolerances: Vec<String> = [Tolerance::Low, Tolerance::Medium, Tolerance::High]
                .into_iter()
                .filter(|t| t.max_unattended() >= risk)
                .map(|t| format!("`{}`", t.as_str()))
                .collect();
            assert_eq!(row.len(), 4, "{row:?}");
            assert_eq!(row[0], format!("`{}`", risk.as_str()), "{row:?}");
            assert_eq!(
                row[1],
                format!("`{}`", s.profile.filesystem.as_str()),
                "{row:?}"
            );
            assert_eq!(
                row[2].contains("writable"),
                !s.profile.writable.is_empty(),
                "{row:?}"
            );
            assert_eq!(row[3], tolerances.join(", "), "{row:?}");
        }
    }
}
