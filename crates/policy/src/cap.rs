//! The capping rules of the policy in force: given the command line's
//! overrides, the plan's `policy:` block and the cap, pick each value and
//! lower what the cap does not allow. The precedence is written once, in
//! `settings.rs`, which is the only caller. Pure: the caller reads the files.
//!
//! The cap is the maintainers' `--policy` file, and for every key that file
//! does not set (or when there is none) the **built-in policy**:
//! `risk_tolerance: low` (the operator's `--risk-tolerance` may go above it,
//! never above the file's); `sandbox:
//! required`; `allow_unsandboxed: false`; `fail_on_secrets: true`; no
//! `env_passthrough` name. A plan is written by whoever opened the pull
//! request: it can ask for less than the cap allows, never more; what it asks
//! beyond the cap is lowered and said so (`policy.capped`, naming the key and
//! the cap). Keys that cannot loosen safety (`max_parallel`, `fail_fast`,
//! `budget`, `allowed_hosts`, `permissions`, `on_approval_required`) have no
//! built-in cap: unset they are no limit, and the plan can only narrow them.

use crate::model::{
    BudgetBlock, EffectivePolicy, OnApproval, PolicyBlock, SandboxMode, StepBudget, Tolerance,
};

/// Command-line overrides.
#[derive(Debug, Clone, Copy, Default)]
pub struct Overrides {
    /// `--risk-tolerance`: the operator's; beats the plan and the built-in
    /// cap, within the policy file's `risk_tolerance`.
    pub risk_tolerance: Option<Tolerance>,
    /// `--max-parallel`.
    pub max_parallel: Option<u32>,
    /// `--fail-on-secrets` (the policy file's `fail_on_secrets: true` still wins).
    pub fail_on_secrets: Option<bool>,
    /// `--fail-fast` / `--no-fail-fast` (the policy file's `fail_fast: true` still wins).
    pub fail_fast: Option<bool>,
}

/// Where the cap of one key comes from, for the messages.
fn cap_of(cap: Option<&PolicyBlock>, set: impl Fn(&PolicyBlock) -> bool, key: &str) -> String {
    match cap {
        Some(c) if set(c) => "the cap of the policy file".to_owned(),
        Some(_) => format!("the built-in cap (the policy file does not set `{key}`)"),
        None => "the built-in cap (no --policy file)".to_owned(),
    }
}

/// The tolerance: `--risk-tolerance` (the operator's) when given, lowered to
/// the policy file's `risk_tolerance`; else the plan's ask, never above the
/// file's value, else low (the built-in cap); else low.
fn tolerance(
    plan: Option<Tolerance>,
    cli: Option<Tolerance>,
    cap: Option<&PolicyBlock>,
    capped: &mut Vec<String>,
) -> Tolerance {
    let file = cap.and_then(|c| c.risk_tolerance);
    if let Some(c) = cli {
        return match file {
            Some(f) if c > f => {
                capped.push(format!(
                    "--risk-tolerance {} lowered to {}, the cap of the policy file",
                    c.as_str(),
                    f.as_str()
                ));
                f
            }
            _ => c,
        };
    }
    let ceiling = file.unwrap_or(Tolerance::Low);
    match plan {
        Some(p) if p > ceiling => {
            let whose = if file.is_some() {
                "the cap of the policy file".to_owned()
            } else {
                format!(
                    "{}; the operator may raise it with --risk-tolerance",
                    cap_of(cap, |c| c.risk_tolerance.is_some(), "risk_tolerance")
                )
            };
            capped.push(format!(
                "risk_tolerance {} asked by the plan lowered to {}, {whose}",
                p.as_str(),
                ceiling.as_str()
            ));
            ceiling
        }
        Some(p) => p,
        None => Tolerance::Low,
    }
}

/// Resolve the policy in force. `cap` is the `--policy` file (None: the
/// built-in policy caps every key).
pub fn resolve(plan: &PolicyBlock, cli: Overrides, cap: Option<&PolicyBlock>) -> EffectivePolicy {
    let mut capped = Vec::new();
    let tol = tolerance(plan.risk_tolerance, cli.risk_tolerance, cap, &mut capped);
    let mut on = plan.on_approval_required.unwrap_or(OnApproval::Deny);
    let fail = fail_on_secrets(plan, cli, cap, &mut capped);
    let mut par = cli.max_parallel.or(plan.max_parallel).unwrap_or(1).max(1);
    let mut fail_fast = cli.fail_fast.or(plan.fail_fast).unwrap_or(true);
    if let Some(cap) = cap {
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
    let step_budget = cap_step_budget(
        plan.step_budget.unwrap_or_default(),
        cap.and_then(|c| c.step_budget),
        &mut capped,
    );
    let allowed_hosts = cap_hosts(
        plan.allowed_hosts.as_deref(),
        cap.and_then(|c| c.allowed_hosts.as_deref()),
        &mut capped,
    );
    let (sandbox, allow_unsandboxed) = sandbox_rules(plan, cap, &mut capped);
    let allow_any_network = any_network(plan, cap, &mut capped);
    let env_passthrough = cap_passthrough(plan.env_passthrough.as_deref(), cap, &mut capped);
    EffectivePolicy {
        patch: plan
            .patch
            .iter()
            .chain(cap.and_then(|c| c.patch.as_ref()))
            .cloned()
            .collect(),
        sandbox,
        allow_unsandboxed,
        allow_any_network,
        env_passthrough,
        permissions: cap.and_then(|c| c.permissions.clone()),
        secret_hosts: cap.and_then(|c| c.secret_hosts.clone()).unwrap_or_default(),
        file_hosts: cap.and_then(|c| c.allowed_hosts.clone()),
        plan_permissions: plan.permissions.clone(),
        allowed_hosts,
        budget,
        step_budget,
        risk_tolerance: tol,
        on_approval_required: on,
        fail_on_secrets: fail,
        max_parallel: par,
        fail_fast,
        cap: if cap.is_some() {
            "policy file"
        } else {
            "built-in"
        }
        .to_owned(),
        cap_file: None,
        capped,
    }
}

/// `fail_on_secrets`: the flag, else the plan, else true. The plan's `false`
/// holds only where the policy file sets `fail_on_secrets: false`; the flag's
/// `false` (the operator's) holds unless the file pins `true`.
fn fail_on_secrets(
    plan: &PolicyBlock,
    cli: Overrides,
    cap: Option<&PolicyBlock>,
    capped: &mut Vec<String>,
) -> bool {
    let file = cap.and_then(|c| c.fail_on_secrets);
    match (cli.fail_on_secrets, plan.fail_on_secrets) {
        (Some(true), _) | (None, Some(true) | None) => true,
        (Some(false), _) if file == Some(true) => {
            capped.push("fail_on_secrets forced to true by the policy file".to_owned());
            true
        }
        (Some(false), _) => false,
        (None, Some(false)) if file == Some(false) => false,
        (None, Some(false)) => {
            capped.push(format!(
                "fail_on_secrets false asked by the plan raised to true, {}",
                cap_of(cap, |c| c.fail_on_secrets.is_some(), "fail_on_secrets")
            ));
            true
        }
    }
}

/// `sandbox`: the plan's value, else the policy file's, else required; never
/// below the cap (the file's value, else required). `allow_unsandboxed`:
/// true only when the policy file sets it true and the plan does not set it
/// false (the built-in cap is false).
fn sandbox_rules(
    plan: &PolicyBlock,
    cap: Option<&PolicyBlock>,
    capped: &mut Vec<String>,
) -> (SandboxMode, bool) {
    let file = cap.and_then(|c| c.sandbox);
    let floor = file.unwrap_or(SandboxMode::Required);
    let mode = match plan.sandbox {
        Some(p) if floor > p => {
            capped.push(format!(
                "sandbox {} asked by the plan raised to {}, {}",
                p.as_str(),
                floor.as_str(),
                cap_of(cap, |c| c.sandbox.is_some(), "sandbox")
            ));
            floor
        }
        Some(p) => p,
        None => floor,
    };
    let file_allows = cap.and_then(|c| c.allow_unsandboxed);
    let allow = match (plan.allow_unsandboxed, file_allows) {
        (Some(false), _) | (_, Some(false) | None) => {
            if plan.allow_unsandboxed == Some(true) {
                capped.push(format!(
                    "allow_unsandboxed true asked by the plan forced to false, {}",
                    cap_of(cap, |c| c.allow_unsandboxed.is_some(), "allow_unsandboxed")
                ));
            }
            false
        }
        (_, Some(true)) => true,
    };
    (mode, allow)
}

/// `allow_any_network`: true only when the policy file sets it true and the
/// plan does not set it false (the built-in cap is false).
fn any_network(plan: &PolicyBlock, cap: Option<&PolicyBlock>, capped: &mut Vec<String>) -> bool {
    match (
        plan.allow_any_network,
        cap.and_then(|c| c.allow_any_network),
    ) {
        (Some(false), _) => false,
        (_, Some(true)) => true,
        (asked, _) => {
            if asked == Some(true) {
                capped.push(format!(
                    "allow_any_network true asked by the plan forced to false, {}",
                    cap_of(cap, |c| c.allow_any_network.is_some(), "allow_any_network")
                ));
            }
            false
        }
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
/// (the plan's names outside it are dropped, and said so); else the built-in
/// cap, which passes no name: the plan's names are dropped.
fn cap_passthrough(
    plan: Option<&[String]>,
    cap: Option<&PolicyBlock>,
    capped: &mut Vec<String>,
) -> Vec<String> {
    let allowed = cap.and_then(|c| c.env_passthrough.as_deref());
    let dropped: Vec<&str> = plan
        .unwrap_or_default()
        .iter()
        .filter(|n| !allowed.unwrap_or_default().contains(n))
        .map(String::as_str)
        .collect();
    if !dropped.is_empty() {
        let whose = match (cap, allowed) {
            (_, Some(_)) => "not in the policy file's list".to_owned(),
            (Some(_), None) => "the built-in cap passes none (the policy file does not set `env_passthrough`): list them in its `env_passthrough`".to_owned(),
            (None, None) => "the built-in cap passes none (no --policy file): list them in a policy file's `env_passthrough`".to_owned(),
        };
        capped.push(format!(
            "env_passthrough: [{}] asked by the plan dropped, {whose}",
            dropped.join(", ")
        ));
    }
    allowed.map(<[String]>::to_vec).unwrap_or_default()
}

/// The plan's `step_budget` (every agent step's default) lowered to the
/// policy file's; each step's own `budget` is lowered to the result when the
/// step runs (`RunShared::step_budget`).
fn cap_step_budget(
    plan: StepBudget,
    cap: Option<StepBudget>,
    capped: &mut Vec<String>,
) -> StepBudget {
    let Some(cap) = cap else { return plan };
    let out = plan.narrowest(cap);
    if let (Some(a), Some(b)) = (plan.max_tokens, cap.max_tokens)
        && b < a
    {
        capped.push(format!(
            "step_budget.max_tokens {a} lowered to {b} by the policy file"
        ));
    }
    if let (Some(a), Some(b)) = (plan.max_cost_usd, cap.max_cost_usd)
        && b < a
    {
        capped.push(format!(
            "step_budget.max_cost_usd {a} lowered to {b} by the policy file"
        ));
    }
    out
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
            step_budget: None,
            allowed_hosts: None,
            secret_hosts: None,
            permissions: None,
            sandbox: None,
            allow_unsandboxed: None,
            allow_any_network: None,
            env_passthrough: None,
            patch: None,
        }
    }

    /// Each case: the plan's step_budget, the file's, what a step's own
    /// budget ends up as (`narrowest` with the result), and whether it was capped.
    #[test]
    fn the_file_caps_every_steps_budget() {
        let sb = |t: Option<u64>, c: Option<f64>| StepBudget {
            max_tokens: t,
            max_cost_usd: c,
        };
        for (plan, file, step, want, said) in [
            (None, None, sb(Some(500), None), sb(Some(500), None), false),
            (
                None,
                Some(sb(Some(100), None)),
                sb(Some(500), None),
                sb(Some(100), None),
                false,
            ),
            (
                None,
                Some(sb(Some(100), None)),
                sb(None, None),
                sb(Some(100), None),
                false,
            ),
            (
                Some(sb(Some(50), Some(1.0))),
                Some(sb(Some(100), Some(0.5))),
                sb(None, None),
                sb(Some(50), Some(0.5)),
                true,
            ),
            (
                Some(sb(Some(500), None)),
                Some(sb(Some(100), None)),
                sb(Some(300), None),
                sb(Some(100), None),
                true,
            ),
            (
                None,
                Some(sb(None, Some(0.25))),
                sb(Some(10), Some(2.0)),
                sb(Some(10), Some(0.25)),
                false,
            ),
        ] {
            let p = PolicyBlock {
                step_budget: plan,
                ..PolicyBlock::default()
            };
            let f = file.map(|f| PolicyBlock {
                step_budget: Some(f),
                ..PolicyBlock::default()
            });
            let e = resolve(&p, Overrides::default(), f.as_ref());
            assert_eq!(
                step.narrowest(e.step_budget),
                want,
                "{plan:?} {file:?} {step:?}"
            );
            assert_eq!(
                e.capped.iter().any(|c| c.starts_with("step_budget.")),
                said,
                "{:?}",
                e.capped
            );
        }
    }

    #[test]
    fn sandbox_mode_plan_then_file_and_the_stricter_when_both() {
        use SandboxMode::{Optional, Required};
        for (plan, file, want) in [
            (None, None, Required),
            (None, Some(Optional), Optional),
            // A file silent on `sandbox` leaves the built-in cap: required.
            (Some(Optional), None, Required),
            (Some(Optional), Some(Optional), Optional),
            (Some(Required), None, Required),
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
        // The built-in cap forbids it; a file must allow it.
        let e = resolve(&p, Overrides::default(), None);
        assert!(!e.allow_unsandboxed);
        assert!(
            e.capped[0].contains("allow_unsandboxed") && e.capped[0].contains("built-in"),
            "{:?}",
            e.capped
        );
        let yes = PolicyBlock {
            allow_unsandboxed: Some(true),
            ..PolicyBlock::default()
        };
        assert!(resolve(&p, Overrides::default(), Some(&yes)).allow_unsandboxed);
        assert!(
            resolve(&PolicyBlock::default(), Overrides::default(), Some(&yes)).allow_unsandboxed
        );
        let no = PolicyBlock {
            allow_unsandboxed: Some(false),
            ..PolicyBlock::default()
        };
        assert!(!resolve(&no, Overrides::default(), Some(&yes)).allow_unsandboxed);
    }

    /// The plan alone never gets more than the built-in policy: every key
    /// that loosens safety, with no policy file and with a silent one.
    #[test]
    fn without_a_file_the_built_in_policy_caps_every_loosening_key() {
        let greedy = PolicyBlock {
            risk_tolerance: Some(Tolerance::High),
            fail_on_secrets: Some(false),
            sandbox: Some(SandboxMode::Optional),
            allow_unsandboxed: Some(true),
            env_passthrough: Some(vec!["DEPLOY_CREDS".to_owned()]),
            ..PolicyBlock::default()
        };
        let silent = PolicyBlock {
            max_parallel: Some(4),
            ..PolicyBlock::default()
        };
        for (cap, source) in [(None, "no --policy file"), (Some(&silent), "does not set")] {
            let e = resolve(&greedy, Overrides::default(), cap);
            assert_eq!(e.risk_tolerance, Tolerance::Low);
            assert!(e.fail_on_secrets);
            assert_eq!(e.sandbox, SandboxMode::Required);
            assert!(!e.allow_unsandboxed);
            assert!(e.env_passthrough.is_empty());
            assert_eq!(e.capped.len(), 5, "{:?}", e.capped);
            for key in [
                "risk_tolerance",
                "fail_on_secrets",
                "sandbox",
                "allow_unsandboxed",
                "env_passthrough",
            ] {
                assert!(
                    e.capped.iter().any(|c| c.starts_with(key)
                        && c.contains("built-in")
                        && c.contains(source)),
                    "{key}: {:?}",
                    e.capped
                );
            }
        }
        assert_eq!(resolve(&greedy, Overrides::default(), None).cap, "built-in");
        assert_eq!(
            resolve(&greedy, Overrides::default(), Some(&silent)).cap,
            "policy file"
        );
        // A file that allows each: the plan gets what it asks.
        let open = PolicyBlock {
            risk_tolerance: Some(Tolerance::High),
            fail_on_secrets: Some(false),
            sandbox: Some(SandboxMode::Optional),
            allow_unsandboxed: Some(true),
            env_passthrough: Some(vec!["DEPLOY_CREDS".to_owned()]),
            ..PolicyBlock::default()
        };
        let e = resolve(&greedy, Overrides::default(), Some(&open));
        assert_eq!(e.risk_tolerance, Tolerance::High);
        assert!(!e.fail_on_secrets);
        assert_eq!(e.sandbox, SandboxMode::Optional);
        assert!(e.allow_unsandboxed);
        assert_eq!(e.env_passthrough, ["DEPLOY_CREDS"]);
        assert!(e.capped.is_empty(), "{:?}", e.capped);
    }

    /// Tolerance: the flag (the operator's) within the file's value; else
    /// the plan's ask within the file's value, else low; else low.
    #[test]
    fn tolerance_is_the_flag_else_the_plans_ask_within_the_cap() {
        use Tolerance::{High, Low, Medium};
        let file = |t: Option<Tolerance>| PolicyBlock {
            risk_tolerance: t,
            ..PolicyBlock::default()
        };
        let all = [None, Some(Low), Some(Medium), Some(High)];
        for plan in all {
            for cli in all {
                for f in [
                    None,
                    Some(None),
                    Some(Some(Low)),
                    Some(Some(Medium)),
                    Some(Some(High)),
                ] {
                    let cap = f.map(file);
                    let e = resolve(
                        &file(plan),
                        Overrides {
                            risk_tolerance: cli,
                            ..Overrides::default()
                        },
                        cap.as_ref(),
                    );
                    let file_max = f.flatten();
                    let want = match cli {
                        Some(c) => c.min(file_max.unwrap_or(High)),
                        None => plan.unwrap_or(Low).min(file_max.unwrap_or(Low)),
                    };
                    assert_eq!(
                        e.risk_tolerance, want,
                        "plan {plan:?} cli {cli:?} file {f:?}"
                    );
                    assert!(file_max.is_none_or(|m| e.risk_tolerance <= m));
                    if cli.is_none() && file_max.is_none() {
                        assert_eq!(e.risk_tolerance, Low, "the plan alone never raises it");
                    }
                    let lowered =
                        cli.is_none() && plan.is_some_and(|p| p > file_max.unwrap_or(Low));
                    assert_eq!(
                        e.capped.iter().any(|c| c.contains("asked by the plan")),
                        lowered,
                        "{:?}",
                        e.capped
                    );
                }
            }
        }
    }

    #[test]
    fn defaults() {
        let e = resolve(&PolicyBlock::default(), Overrides::default(), None);
        assert_eq!(e.risk_tolerance, Tolerance::Low);
        assert_eq!(e.on_approval_required, OnApproval::Deny);
        assert!(e.fail_on_secrets);
        assert_eq!(e.max_parallel, 1);
        assert_eq!(e.sandbox, SandboxMode::Required);
        assert!(!e.allow_unsandboxed);
        assert!(e.capped.is_empty());
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
        // A file silent on it (or none): the built-in cap passes no name.
        for cap in [Some(&file), None] {
            let e = resolve(&plan, Overrides::default(), cap);
            assert!(e.env_passthrough.is_empty());
            assert_eq!(e.capped.len(), 1);
            assert!(
                e.capped[0].contains("RUST_LOG, NODE_OPTIONS"),
                "{:?}",
                e.capped
            );
        }
        file.env_passthrough = names(&["RUST_LOG", "JAVA_HOME"]);
        let e = resolve(&plan, Overrides::default(), Some(&file));
        assert_eq!(e.env_passthrough, ["RUST_LOG", "JAVA_HOME"]);
        assert_eq!(
            e.capped,
            [
                "env_passthrough: [NODE_OPTIONS] asked by the plan dropped, not in the policy file's list"
            ]
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
