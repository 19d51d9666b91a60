//! The capping rules of the policy in force: given the command line's
//! overrides, the plan's `policy:` block and the maintainers' `--policy`
//! file, pick each value and lower what the file caps. The precedence is
//! written once, in `settings.rs`, which is the only caller.
//! Pure: the caller reads the files.

use crate::model::{BudgetBlock, EffectivePolicy, OnApproval, PolicyBlock, SandboxMode, Tolerance};

/// Command-line overrides.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Overrides {
    /// `--risk-tolerance`.
    pub risk_tolerance: Option<Tolerance>,
    /// `--max-parallel`.
    pub max_parallel: Option<u32>,
    /// `--fail-on-secrets` (the policy file's `fail_on_secrets: true` still wins).
    pub fail_on_secrets: Option<bool>,
    /// `--fail-fast` / `--no-fail-fast` (the policy file's `fail_fast: true` still wins).
    pub fail_fast: Option<bool>,
}

/// Resolve the policy in force.
pub(crate) fn resolve(
    plan: &PolicyBlock,
    cli: Overrides,
    cap: Option<&PolicyBlock>,
) -> EffectivePolicy {
    let mut capped = Vec::new();
    let mut tol = cli
        .risk_tolerance
        .or(plan.risk_tolerance)
        .unwrap_or(Tolerance::Low);
    let mut on = plan.on_approval_required.unwrap_or(OnApproval::Deny);
    let mut fail = cli.fail_on_secrets.or(plan.fail_on_secrets).unwrap_or(true);
    let mut par = cli.max_parallel.or(plan.max_parallel).unwrap_or(1).max(1);
    let mut fail_fast = cli.fail_fast.or(plan.fail_fast).unwrap_or(true);
    if let Some(cap) = cap {
        if let Some(max) = cap.risk_tolerance
            && tol > max
        {
            capped.push(format!(
                "risk_tolerance {} lowered to {} by the policy file",
                tol.as_str(),
                max.as_str()
            ));
            tol = max;
        }
        if let Some(c) = cap.on_approval_required {
            let s = on.strictest(c);
            if s != on {
                capped.push(format!(
                    "on_approval_required {} raised to {} by the policy file",
                    on.as_str(),
                    s.as_str()
                ));
                on = s;
            }
        }
        if cap.fail_on_secrets == Some(true) && !fail {
            capped.push("fail_on_secrets forced to true by the policy file".to_owned());
            fail = true;
        }
        // Keeping going is not a safety matter, but it runs more unattended
        // steps after a failure: the maintainers may pin the default.
        if cap.fail_fast == Some(true) && !fail_fast {
            capped.push("fail_fast forced to true by the policy file".to_owned());
            fail_fast = true;
        }
        if let Some(max) = cap.max_parallel
            && par > max
        {
            capped.push(format!(
                "max_parallel {par} lowered to {max} by the policy file"
            ));
            par = max.max(1);
        }
    }
    let budget = cap_budget(
        plan.budget.unwrap_or_default(),
        cap.and_then(|c| c.budget),
        &mut capped,
    );
    let allowed_hosts = cap_hosts(
        plan.allowed_hosts.as_deref(),
        cap.and_then(|c| c.allowed_hosts.as_deref()),
        &mut capped,
    );
    let (sandbox, allow_unsandboxed) = sandbox_rules(plan, cap, &mut capped);
    let env_passthrough = cap_passthrough(
        plan.env_passthrough.as_deref(),
        cap.and_then(|c| c.env_passthrough.as_deref()),
        &mut capped,
    );
    EffectivePolicy {
        sandbox,
        allow_unsandboxed,
        env_passthrough,
        permissions: cap.and_then(|c| c.permissions.clone()),
        plan_permissions: plan.permissions.clone(),
        allowed_hosts,
        budget,
        risk_tolerance: tol,
        on_approval_required: on,
        fail_on_secrets: fail,
        max_parallel: par,
        fail_fast,
        capped,
    }
}

/// `sandbox`: the plan's value, else the policy file's, else required; when
/// both set one, the stricter (so the maintainers can pin `required`, and allow
/// `optional` for plans that do not insist). `allow_unsandboxed`: false when
/// either says false.
fn sandbox_rules(
    plan: &PolicyBlock,
    cap: Option<&PolicyBlock>,
    capped: &mut Vec<String>,
) -> (SandboxMode, bool) {
    let file = cap.and_then(|c| c.sandbox);
    let mode = match (plan.sandbox, file) {
        (Some(p), Some(f)) if f > p => {
            capped.push(format!(
                "sandbox {} raised to {} by the policy file",
                p.as_str(),
                f.as_str()
            ));
            f
        }
        (Some(p), _) => p,
        (None, Some(f)) => f,
        (None, None) => SandboxMode::Required,
    };
    let file_allows = cap.and_then(|c| c.allow_unsandboxed);
    if file_allows == Some(false) && plan.allow_unsandboxed == Some(true) {
        capped.push("allow_unsandboxed forced to false by the policy file".to_owned());
    }
    let allow = plan.allow_unsandboxed.unwrap_or(true) && file_allows.unwrap_or(true);
    (mode, allow)
}

impl EffectivePolicy {
    /// The permission lists in force (policy file first).
    pub(crate) fn permission_lists(&self) -> Vec<super::permissions::RuleList<'_>> {
        let mut v = Vec::new();
        if let Some(r) = &self.permissions {
            v.push(super::permissions::RuleList {
                source: "policy file",
                rules: r,
            });
        }
        if let Some(r) = &self.plan_permissions {
            v.push(super::permissions::RuleList {
                source: "plan",
                rules: r,
            });
        }
        v
    }
}

/// The host allow-list in force: a host must be allowed by every list that is set.
fn cap_hosts(
    plan: Option<&[String]>,
    cap: Option<&[String]>,
    capped: &mut Vec<String>,
) -> Option<Vec<String>> {
    match (plan, cap) {
        (p, None) => p.map(<[String]>::to_vec),
        (None, Some(c)) => {
            capped.push(format!(
                "allowed_hosts set to [{}] by the policy file",
                c.join(", ")
            ));
            Some(c.to_vec())
        }
        (Some(p), Some(c)) => {
            let both = super::hosts::intersect(p, c);
            if both != p {
                capped.push(format!(
                    "allowed_hosts narrowed to [{}] by the policy file",
                    both.join(", ")
                ));
            }
            Some(both)
        }
    }
}

/// The `env_passthrough` in force: the policy file's list when it sets one
/// (the plan's names outside it are dropped, and said so), else the plan's.
fn cap_passthrough(
    plan: Option<&[String]>,
    cap: Option<&[String]>,
    capped: &mut Vec<String>,
) -> Vec<String> {
    match (plan, cap) {
        (p, None) => p.map(<[String]>::to_vec).unwrap_or_default(),
        (p, Some(c)) => {
            let dropped: Vec<&str> = p
                .unwrap_or_default()
                .iter()
                .filter(|n| !c.contains(n))
                .map(String::as_str)
                .collect();
            if !dropped.is_empty() {
                capped.push(format!(
                    "env_passthrough: [{}] dropped by the policy file",
                    dropped.join(", ")
                ));
            }
            c.to_vec()
        }
    }
}

fn cap_budget(
    plan: BudgetBlock,
    cap: Option<BudgetBlock>,
    capped: &mut Vec<String>,
) -> BudgetBlock {
    let Some(cap) = cap else { return plan };
    fn lower<T: PartialOrd + Copy + std::fmt::Display>(
        name: &str,
        mine: Option<T>,
        theirs: Option<T>,
        capped: &mut Vec<String>,
    ) -> Option<T> {
        match (mine, theirs) {
            (Some(a), Some(b)) if b < a => {
                capped.push(format!(
                    "budget.{name} {a} lowered to {b} by the policy file"
                ));
                Some(b)
            }
            (None, Some(b)) => Some(b),
            (a, _) => a,
        }
    }
    BudgetBlock {
        max_tokens: lower("max_tokens", plan.max_tokens, cap.max_tokens, capped),
        max_cost_usd: lower("max_cost_usd", plan.max_cost_usd, cap.max_cost_usd, capped),
        max_wall_seconds: lower(
            "max_wall_seconds",
            plan.max_wall_seconds,
            cap.max_wall_seconds,
            capped,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(
        t: Option<Tolerance>,
        on: Option<OnApproval>,
        f: Option<bool>,
        p: Option<u32>,
    ) -> PolicyBlock {
        PolicyBlock {
            risk_tolerance: t,
            on_approval_required: on,
            fail_on_secrets: f,
            max_parallel: p,
            fail_fast: None,
            budget: None,
            allowed_hosts: None,
            permissions: None,
            sandbox: None,
            allow_unsandboxed: None,
            env_passthrough: None,
        }
    }

    #[test]
    fn sandbox_mode_plan_then_file_and_the_stricter_when_both() {
        use SandboxMode::{Optional, Required};
        for (plan, file, want) in [
            (None, None, Required),
            (None, Some(Optional), Optional),
            (Some(Optional), None, Optional),
            (Some(Optional), Some(Required), Required),
            (Some(Required), Some(Optional), Required),
        ] {
            let p = PolicyBlock {
                sandbox: plan,
                ..PolicyBlock::default()
            };
            let f = PolicyBlock {
                sandbox: file,
                ..PolicyBlock::default()
            };
            let e = resolve(&p, Overrides::default(), Some(&f));
            assert_eq!(e.sandbox, want, "{plan:?} {file:?}");
        }
        let p = PolicyBlock {
            allow_unsandboxed: Some(true),
            ..PolicyBlock::default()
        };
        let f = PolicyBlock {
            allow_unsandboxed: Some(false),
            ..PolicyBlock::default()
        };
        let e = resolve(&p, Overrides::default(), Some(&f));
        assert!(!e.allow_unsandboxed);
        assert!(e.capped.iter().any(|c| c.contains("allow_unsandboxed")));
        assert!(resolve(&p, Overrides::default(), None).allow_unsandboxed);
    }

    #[test]
    fn defaults() {
        let e = resolve(&PolicyBlock::default(), Overrides::default(), None);
        assert_eq!(e.risk_tolerance, Tolerance::Low);
        assert_eq!(e.on_approval_required, OnApproval::Deny);
        assert!(e.fail_on_secrets);
        assert_eq!(e.max_parallel, 1);
    }

    #[test]
    fn the_file_caps_plan_and_cli_but_never_loosens() {
        let plan = block(
            Some(Tolerance::High),
            Some(OnApproval::Skip),
            Some(false),
            Some(8),
        );
        let cap = block(
            Some(Tolerance::Medium),
            Some(OnApproval::Deny),
            Some(true),
            Some(2),
        );
        let e = resolve(
            &plan,
            Overrides {
                risk_tolerance: Some(Tolerance::High),
                max_parallel: None,
                fail_on_secrets: Some(false),
                fail_fast: None,
            },
            Some(&cap),
        );
        assert_eq!(e.risk_tolerance, Tolerance::Medium);
        assert_eq!(e.on_approval_required, OnApproval::Deny);
        assert!(e.fail_on_secrets);
        assert_eq!(e.max_parallel, 2);
        assert_eq!(e.capped.len(), 4);
        // A looser file changes nothing.
        let strict = block(
            Some(Tolerance::Low),
            Some(OnApproval::Deny),
            Some(true),
            Some(1),
        );
        let loose = block(
            Some(Tolerance::High),
            Some(OnApproval::Skip),
            Some(false),
            Some(64),
        );
        let e = resolve(&strict, Overrides::default(), Some(&loose));
        assert_eq!(e.risk_tolerance, Tolerance::Low);
        assert_eq!(e.on_approval_required, OnApproval::Deny);
        assert!(e.fail_on_secrets);
        assert_eq!(e.max_parallel, 1);
        assert!(e.capped.is_empty());
    }

    #[test]
    fn the_fail_on_secrets_flag_beats_the_plan_but_not_a_pinning_policy_file() {
        let plan = block(None, None, Some(true), None);
        let off = Overrides {
            fail_on_secrets: Some(false),
            ..Overrides::default()
        };
        assert!(!resolve(&plan, off, None).fail_on_secrets);
        let silent = block(Some(Tolerance::High), None, None, None);
        assert!(!resolve(&plan, off, Some(&silent)).fail_on_secrets);
        let pin = block(None, None, Some(true), None);
        let e = resolve(&plan, off, Some(&pin));
        assert!(e.fail_on_secrets);
        assert_eq!(
            e.capped,
            ["fail_on_secrets forced to true by the policy file"]
        );
        let on = Overrides {
            fail_on_secrets: Some(true),
            ..Overrides::default()
        };
        assert!(resolve(&block(None, None, Some(false), None), on, None).fail_on_secrets);
    }

    #[test]
    fn fail_fast_flag_then_plan_then_true_and_a_file_may_pin_it_true() {
        let plan = |f: Option<bool>| PolicyBlock {
            fail_fast: f,
            ..PolicyBlock::default()
        };
        let cli = |f: Option<bool>| Overrides {
            fail_fast: f,
            ..Overrides::default()
        };
        assert!(resolve(&plan(None), cli(None), None).fail_fast);
        assert!(!resolve(&plan(Some(false)), cli(None), None).fail_fast);
        assert!(resolve(&plan(Some(false)), cli(Some(true)), None).fail_fast);
        assert!(!resolve(&plan(Some(true)), cli(Some(false)), None).fail_fast);
        // A file's `true` pins it; its `false` loosens nothing and forces nothing.
        let e = resolve(&plan(Some(false)), cli(None), Some(&plan(Some(true))));
        assert!(e.fail_fast);
        assert_eq!(e.capped, ["fail_fast forced to true by the policy file"]);
        let e = resolve(&plan(None), cli(Some(false)), Some(&plan(Some(true))));
        assert!(e.fail_fast);
        let e = resolve(&plan(None), cli(None), Some(&plan(Some(false))));
        assert!(e.fail_fast);
        assert!(e.capped.is_empty());
        assert!(!resolve(&plan(Some(false)), cli(None), Some(&plan(Some(false)))).fail_fast);
    }

    #[test]
    fn the_file_decides_the_passthrough_list() {
        let names = |v: &[&str]| Some(v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        let mut plan = PolicyBlock::default();
        let mut file = PolicyBlock::default();
        assert!(
            resolve(&plan, Overrides::default(), Some(&file))
                .env_passthrough
                .is_empty()
        );
        plan.env_passthrough = names(&["RUST_LOG", "NODE_OPTIONS"]);
        let e = resolve(&plan, Overrides::default(), Some(&file));
        assert_eq!(e.env_passthrough, ["RUST_LOG", "NODE_OPTIONS"]);
        assert!(e.capped.is_empty());
        file.env_passthrough = names(&["RUST_LOG", "JAVA_HOME"]);
        let e = resolve(&plan, Overrides::default(), Some(&file));
        assert_eq!(e.env_passthrough, ["RUST_LOG", "JAVA_HOME"]);
        assert_eq!(
            e.capped,
            ["env_passthrough: [NODE_OPTIONS] dropped by the policy file"]
        );
        file.env_passthrough = names(&[]);
        let e = resolve(&plan, Overrides::default(), Some(&file));
        assert!(e.env_passthrough.is_empty());
        assert_eq!(e.capped.len(), 1);
    }

    #[test]
    fn the_file_narrows_the_host_list() {
        let hosts = |v: &[&str]| Some(v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        let mut plan = PolicyBlock::default();
        let mut file = PolicyBlock::default();
        let e = resolve(&plan, Overrides::default(), Some(&file));
        assert_eq!(e.allowed_hosts, None, "no list: any host");
        file.allowed_hosts = hosts(&["*.example.com"]);
        let e = resolve(&plan, Overrides::default(), Some(&file));
        assert_eq!(e.allowed_hosts, hosts(&["*.example.com"]));
        assert_eq!(e.capped.len(), 1);
        plan.allowed_hosts = hosts(&["api.example.com", "evil.net"]);
        let e = resolve(&plan, Overrides::default(), Some(&file));
        assert_eq!(e.allowed_hosts, hosts(&["api.example.com"]));
        assert!(e.capped[0].contains("narrowed"), "{:?}", e.capped);
        let e = resolve(&plan, Overrides::default(), None);
        assert_eq!(e.allowed_hosts, hosts(&["api.example.com", "evil.net"]));
        assert!(e.capped.is_empty());
        plan.allowed_hosts = hosts(&["a.example.com"]);
        let e = resolve(&plan, Overrides::default(), Some(&file));
        assert!(e.capped.is_empty(), "already inside the file's list");
    }
}
