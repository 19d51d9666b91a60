//! Permission rules (design 002 §5.1): which tool may do what to which resource.
//!
//! Pure. A step is mapped to the resources it touches and the level it needs
//! on each ([`needs`]); each list of rules in force (the `--policy` file's,
//! the plan's) must allow every one of them ([`evaluate`]):
//!
//! - the enabled rules whose `tools` name the step's tool (empty: any tool),
//!   whose `resource` glob matches and whose `conditions` hold are the
//!   candidates; the one with the highest `priority` decides (on a tie, the
//!   lowest level, then the first written: the stricter reading wins);
//! - a rule grants its level and every level below it, in the order
//!   none < read < write < execute < admin; `none` grants nothing (a deny);
//! - no candidate: denied (default deny).
//!
//! Without any `permissions:` list nothing changes (no verdict at all).
//! A denied step is blocked: it never runs, whatever the approvals.

use globset::GlobSet;

use crate::model::{Level, PermissionRule, Risk, Verdict};

/// One thing a step needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The resource, as rules match it.
    pub resource: String,
    /// The level needed.
    pub level: Level,
}

pub use crate::model::RuleList;

/// The resources a step touches and the level it needs on each, from what its
/// tool says it touches (`ActionSpec::needs`). A step whose effective risk is
/// dangerous needs `admin` on its first resource.
pub fn needs(touches: Vec<Access>, effective: Risk) -> Vec<Access> {
    let mut out = touches;
    if effective == Risk::Dangerous
        && let Some(first) = out.first_mut()
    {
        first.level = Level::Admin;
    }
    out
}

/// A rule's resource pattern, compiled once.
#[derive(Debug, Clone)]
enum Pattern {
    /// `*` alone: anything.
    Any,
    /// A glob, matched segment by segment.
    Glob(GlobSet),
    /// Refused at load; never a match (and never a grant).
    Invalid,
}

/// Compile a rule's resource pattern (`*` alone matches anything).
fn matcher(pattern: &str) -> Result<Option<GlobSet>, String> {
    if pattern == "*" {
        return Ok(None);
    }
    super::glob::matcher(pattern, true).map(Some)
}

fn pattern(resource: &str) -> Pattern {
    match matcher(resource) {
        Ok(None) => Pattern::Any,
        Ok(Some(g)) => Pattern::Glob(g),
        Err(_) => Pattern::Invalid,
    }
}

/// A list of rules with their patterns compiled, for judging many paths
/// (a search, an archive, a repository's changed files).
#[derive(Debug, Clone)]
pub struct Compiled {
    source: &'static str,
    rules: Vec<(PermissionRule, Pattern)>,
}

impl Compiled {
    /// Compile one list.
    pub fn new(list: &RuleList<'_>) -> Compiled {
        Compiled {
            source: list.source,
            rules: list
                .rules
                .iter()
                .map(|r| (r.clone(), pattern(&r.resource)))
                .collect(),
        }
    }
}

/// Problems with a list of rules: bad globs, duplicate ids (for the loaders).
pub fn check(rules: &[PermissionRule]) -> Vec<(usize, &'static str, String)> {
    let mut out = Vec::new();
    for (i, r) in rules.iter().enumerate() {
        if let Err(e) = matcher(&r.resource) {
            out.push((
                i,
                "resource",
                format!("rule `{}`: `{}` is not a valid glob: {e}", r.id, r.resource),
            ));
        }
        if rules[..i].iter().any(|o| o.id == r.id) {
            out.push((i, "id", format!("rule id `{}` is used twice", r.id)));
        }
    }
    out
}

fn applies(r: &PermissionRule, p: &Pattern, tool: &str, resource: &str, risk: Risk) -> bool {
    r.enabled
        && (r.tools.is_empty() || r.tools.iter().any(|t| t.as_str() == tool))
        && r.conditions.risk_at_most.is_none_or(|m| risk <= m)
        && match p {
            Pattern::Any => true,
            Pattern::Glob(m) => m.is_match(resource),
            Pattern::Invalid => false,
        }
}

/// The rule that decides `resource` for `tool` in one compiled list, if any.
fn deciding<'a>(
    list: &'a Compiled,
    tool: &str,
    resource: &str,
    risk: Risk,
) -> Option<&'a PermissionRule> {
    let mut best: Option<&PermissionRule> = None;
    for (r, _) in list
        .rules
        .iter()
        .filter(|(r, p)| applies(r, p, tool, resource, risk))
    {
        best = match best {
            None => Some(r),
            Some(b)
                if r.priority > b.priority || (r.priority == b.priority && r.level < b.level) =>
            {
                Some(r)
            }
            keep => keep,
        };
    }
    best
}

/// Evaluate every list in force (None when there is none).
pub fn evaluate(
    lists: &[RuleList<'_>],
    tool: &str,
    needs: &[Access],
    risk: Risk,
) -> Option<Verdict> {
    if lists.is_empty() {
        return None;
    }
    let compiled: Vec<Compiled> = lists.iter().map(Compiled::new).collect();
    Some(evaluate_compiled(&compiled, tool, needs, risk))
}

/// Evaluate compiled lists (at least one list is in force).
pub fn evaluate_compiled(lists: &[Compiled], tool: &str, needs: &[Access], risk: Risk) -> Verdict {
    let mut rules = Vec::new();
    let mut granted = Vec::new();
    for list in lists {
        for n in needs {
            match deciding(list, tool, &n.resource, risk) {
                None => {
                    return Verdict {
                        allowed: false,
                        rules: Vec::new(),
                        reason: format!(
                            "permission denied: no {} rule allows {} on `{}` for tool {tool} (default deny)",
                            list.source,
                            n.level.as_str(),
                            n.resource
                        ),
                    };
                }
                Some(r) if r.level == Level::None || r.level < n.level => {
                    return Verdict {
                        allowed: false,
                        rules: vec![r.id.clone()],
                        reason: format!(
                            "permission denied by {} rule `{}` (grants {} on `{}`; the step needs {})",
                            list.source,
                            r.id,
                            r.level.as_str(),
                            n.resource,
                            n.level.as_str()
                        ),
                    };
                }
                Some(r) => {
                    if !rules.contains(&r.id) {
                        rules.push(r.id.clone());
                    }
                    granted.push(format!(
                        "{} rule `{}` allows {} on `{}`",
                        list.source,
                        r.id,
                        n.level.as_str(),
                        n.resource
                    ));
                }
            }
        }
    }
    Verdict {
        allowed: true,
        rules,
        reason: format!("permission: {}", granted.join(", ")),
    }
}

/// Combine the verdicts of the parts of one step (its own action, its
/// rollback command): the first denial decides; else every grant is named.
pub fn combine(verdicts: Vec<Verdict>) -> Option<Verdict> {
    let mut out: Option<Verdict> = None;
    for v in verdicts {
        if !v.allowed {
            return Some(v);
        }
        out = Some(match out {
            None => v,
            Some(mut acc) => {
                for r in v.rules {
                    if !acc.rules.contains(&r) {
                        acc.rules.push(r);
                    }
                }
                let more = v.reason.strip_prefix("permission: ").unwrap_or(&v.reason);
                acc.reason = format!("{}, {more}", acc.reason);
                acc
            }
        });
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::model::{Conditions, ToolName};

    fn rule(
        id: &str,
        resource: &str,
        tools: &[&str],
        level: Level,
        priority: i64,
    ) -> PermissionRule {
        PermissionRule {
            id: id.into(),
            resource: resource.into(),
            tools: tools
                .iter()
                .map(|s| *ToolName::ALL.iter().find(|t| t.as_str() == *s).unwrap())
                .collect(),
            level,
            conditions: Conditions::default(),
            priority,
            enabled: true,
        }
    }

    fn need(resource: &str, level: Level) -> Vec<Access> {
        vec![Access {
            resource: resource.into(),
            level,
        }]
    }

    fn eval(rules: &[PermissionRule], tool: &str, n: &[Access], risk: Risk) -> Verdict {
        evaluate(
            &[RuleList {
                source: "policy file",
                rules,
            }],
            tool,
            n,
            risk,
        )
        .unwrap()
    }

    #[test]
    fn no_list_means_no_verdict_and_an_empty_list_denies_everything() {
        assert!(evaluate(&[], "bash", &need(".", Level::Read), Risk::Safe).is_none());
        let v = eval(&[], "bash", &need(".", Level::Read), Risk::Safe);
        assert!(!v.allowed);
        assert!(v.reason.contains("default deny"), "{}", v.reason);
    }

    #[test]
    fn the_highest_priority_matching_rule_decides_and_levels_include_lower_ones() {
        let rules = [
            rule("all-read", "*", &[], Level::Read, 10),
            rule(
                "src-write",
                "src/**",
                &["bash", "archive"],
                Level::Execute,
                50,
            ),
            rule("secret-none", "src/secret/**", &[], Level::None, 90),
            rule("off", "*", &[], Level::Admin, 1000),
        ];
        let mut rules = rules.to_vec();
        rules[3].enabled = false;
        let v = eval(
            &rules,
            "bash",
            &need("src/a", Level::Execute),
            Risk::Moderate,
        );
        assert!(v.allowed);
        assert_eq!(v.rules, ["src-write"]);
        let v = eval(
            &rules,
            "archive",
            &need("src/a.tar", Level::Write),
            Risk::Moderate,
        );
        assert!(v.allowed, "execute includes write");
        let v = eval(
            &rules,
            "bash",
            &need("src/secret/k", Level::Read),
            Risk::Safe,
        );
        assert!(!v.allowed);
        assert_eq!(v.rules, ["secret-none"]);
        let v = eval(
            &rules,
            "find_in_files",
            &need("src/a", Level::Read),
            Risk::Safe,
        );
        assert_eq!(v.rules, ["all-read"], "src-write names other tools");
        let v = eval(&rules, "bash", &need("docs", Level::Execute), Risk::Safe);
        assert!(!v.allowed);
        assert!(v.reason.contains("grants read"), "{}", v.reason);
    }

    #[test]
    fn ties_go_to_the_stricter_rule_and_conditions_filter() {
        let mut lax = rule("lax", "*", &[], Level::Admin, 5);
        lax.conditions.risk_at_most = Some(Risk::Moderate);
        let rules = [rule("a", "*", &[], Level::Write, 5), lax];
        let v = eval(&rules, "bash", &need(".", Level::Execute), Risk::Safe);
        assert_eq!(v.rules, ["a"]);
        assert!(!v.allowed);
        let only_lax = [rules[1].clone()];
        assert!(
            eval(
                &only_lax,
                "bash",
                &need(".", Level::Execute),
                Risk::Moderate
            )
            .allowed
        );
        assert!(!eval(&only_lax, "bash", &need(".", Level::Admin), Risk::Dangerous).allowed);
    }

    #[test]
    fn every_list_must_allow() {
        let file = [rule("file-all", "*", &[], Level::Admin, 1)];
        let plan = [rule("plan-read", "*", &[], Level::Read, 1)];
        let lists = [
            RuleList {
                source: "policy file",
                rules: &file,
            },
            RuleList {
                source: "plan",
                rules: &plan,
            },
        ];
        let v = evaluate(&lists, "bash", &need(".", Level::Execute), Risk::Safe).unwrap();
        assert!(!v.allowed);
        assert!(v.reason.contains("plan rule `plan-read`"), "{}", v.reason);
    }

    #[test]
    fn globs_match_paths_by_segment_and_urls() {
        let rules = [
            rule("one", "src/*", &[], Level::Read, 1),
            rule("api", "https://api.example.com/**", &[], Level::Write, 1),
        ];
        assert!(eval(&rules, "bash", &need("src/a", Level::Read), Risk::Safe).allowed);
        assert!(!eval(&rules, "bash", &need("src/a/b", Level::Read), Risk::Safe).allowed);
        assert!(
            eval(
                &rules,
                "bash",
                &need("https://api.example.com/v1/x", Level::Write),
                Risk::Safe
            )
            .allowed
        );
        assert!(
            !eval(
                &rules,
                "bash",
                &need("https://evil.example.com/v1", Level::Read),
                Risk::Safe
            )
            .allowed
        );
        let bad = [
            rule("bad", "src/[", &[], Level::Read, 1),
            rule("bad", "*", &[], Level::Read, 1),
        ];
        let problems = check(&bad);
        assert_eq!(problems.len(), 2, "{problems:?}");
    }
}
