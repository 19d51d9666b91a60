//! The run's outcome and its exit code: SPEC's table as one type.
//!
//! Every way a run can end maps to exactly one [`RunStatus`]; the process exit
//! code, the report's `status` string and the precedence between outcomes all
//! come from here, so they cannot drift apart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a run ended. The declaration order is *not* the precedence; see [`RunStatus::rank`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every step that was meant to run succeeded; no blocking finding. Exit 0.
    Success,
    /// A step failed: non-zero exit, timeout, expected_output mismatch. Exit 1.
    Failed,
    /// Invalid plan or usage; nothing was executed. Exit 2.
    Invalid,
    /// A step needed an approval it did not have, or was blocked. Exit 3.
    Denied,
    /// Secrets were found in what the run produced. Exit 4.
    SecretsFound,
    /// An agent answer was rejected by the fail-close parser after its last attempt. Exit 5.
    Rejected,
    /// The run's budget (tokens, cost or wall time) was exhausted. Exit 6.
    BudgetExhausted,
    /// SIGINT/SIGTERM: children were stopped. Exit 130.
    Interrupted,
}

impl RunStatus {
    /// The process exit code of SPEC's table.
    pub fn code(self) -> u8 {
        match self {
            RunStatus::Success => 0,
            RunStatus::Failed => 1,
            RunStatus::Invalid => 2,
            RunStatus::Denied => 3,
            RunStatus::SecretsFound => 4,
            RunStatus::Rejected => 5,
            RunStatus::BudgetExhausted => 6,
            RunStatus::Interrupted => 130,
        }
    }

    /// The report's `status` string.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Success => "success",
            RunStatus::Failed => "failed",
            RunStatus::Invalid => "invalid",
            RunStatus::Denied => "denied",
            RunStatus::SecretsFound => "secrets_found",
            RunStatus::Rejected => "rejected",
            RunStatus::BudgetExhausted => "budget_exhausted",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// Precedence when several outcomes apply (SPEC: 130, 4, 5, 1, 6, 3; invalid
    /// stops everything before it starts). Higher wins.
    fn rank(self) -> u8 {
        match self {
            RunStatus::Success => 0,
            RunStatus::Denied => 1,
            RunStatus::BudgetExhausted => 2,
            RunStatus::Failed => 3,
            RunStatus::Rejected => 4,
            RunStatus::SecretsFound => 5,
            RunStatus::Invalid => 6,
            RunStatus::Interrupted => 7,
        }
    }

    /// The outcome that wins when both `self` and `other` apply.
    #[must_use]
    pub fn combine(self, other: RunStatus) -> RunStatus {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// A run's outcome in three words, for people and dashboards: `success`
/// (exit 0, everything meant to run ran and succeeded), `partial` (exit 0, but
/// a step was skipped for want of approval or failed under
/// `continue_on_error`) or `failure` (any other exit code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Conclusion {
    /// Exit 0 and nothing left undone.
    Success,
    /// Exit 0, but the run did less than the plan asked (see `partial_reasons`).
    Partial,
    /// A non-zero exit code.
    Failure,
}

impl Conclusion {
    /// The report's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Conclusion::Success => "success",
            Conclusion::Partial => "partial",
            Conclusion::Failure => "failure",
        }
    }
}

/// Why a run that exited 0 succeeded only partly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PartialKind {
    /// Skipped for want of an approval (`on_approval_required: skip`), or
    /// skipped because a dependency was.
    ApprovalRequired,
    /// Failed under `continue_on_error`.
    AllowedFailure,
}

impl PartialKind {
    /// What `--strict` makes of it: a step skipped for want of approval is
    /// `denied` (exit 3), an allowed failure `failed` (exit 1).
    pub fn strict_status(self) -> RunStatus {
        match self {
            PartialKind::ApprovalRequired => RunStatus::Denied,
            PartialKind::AllowedFailure => RunStatus::Failed,
        }
    }
}

impl RunStatus {
    /// The conclusion of a run that ended so; `partial`: something made it partial.
    pub fn conclusion(self, partial: bool) -> Conclusion {
        match self {
            RunStatus::Success if partial => Conclusion::Partial,
            RunStatus::Success => Conclusion::Success,
            _ => Conclusion::Failure,
        }
    }

    /// `--strict`: the status once every reason the run was partial counts
    /// as a failure (SPEC's precedence decides between them).
    #[must_use]
    pub fn strict(self, kinds: impl IntoIterator<Item = PartialKind>) -> RunStatus {
        kinds
            .into_iter()
            .fold(self, |s, k| s.combine(k.strict_status()))
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::RunStatus::{self, *};

    const ALL: [RunStatus; 8] = [
        Success,
        Failed,
        Invalid,
        Denied,
        SecretsFound,
        Rejected,
        BudgetExhausted,
        Interrupted,
    ];

    #[test]
    fn spec_precedence_130_4_5_1_6_3() {
        let order = [
            Interrupted,
            SecretsFound,
            Rejected,
            Failed,
            BudgetExhausted,
            Denied,
        ];
        for (i, hi) in order.iter().enumerate() {
            for lo in &order[i + 1..] {
                assert_eq!(hi.combine(*lo), *hi, "{hi} must beat {lo}");
                assert_eq!(lo.combine(*hi), *hi, "{hi} must beat {lo}");
            }
            assert_eq!(hi.combine(Success), *hi);
        }
    }

    #[test]
    fn strict_turns_partial_into_failure_by_precedence() {
        use super::{Conclusion, PartialKind::*};
        assert_eq!(Success.strict([]), Success);
        assert_eq!(Success.strict([ApprovalRequired]), Denied);
        assert_eq!(Success.strict([AllowedFailure]), Failed);
        assert_eq!(Success.strict([ApprovalRequired, AllowedFailure]), Failed);
        assert_eq!(SecretsFound.strict([AllowedFailure]), SecretsFound);
        assert_eq!(Success.conclusion(true), Conclusion::Partial);
        assert_eq!(Success.conclusion(false), Conclusion::Success);
        assert_eq!(Denied.conclusion(true), Conclusion::Failure);
    }

    /// Where each variant sits in [`ALL`]. No wildcard arm: a new variant
    /// does not compile until it is listed here, and so in `ALL`.
    const fn position(s: RunStatus) -> usize {
        match s {
            Success => 0,
            Failed => 1,
            Invalid => 2,
            Denied => 3,
            SecretsFound => 4,
            Rejected => 5,
            BudgetExhausted => 6,
            Interrupted => 7,
        }
    }

    #[test]
    fn all_lists_every_variant_once() {
        for (i, s) in ALL.iter().enumerate() {
            assert_eq!(position(*s), i, "{s}");
        }
    }

    /// The first table of `doc` whose header starts `| code |`: each row's
    /// code, and its `status` cell when the table has one (SPEC's does, the
    /// README's does not). A row whose first cell is no code fails the test.
    fn exit_code_table(doc: &str) -> Vec<(u8, Option<String>)> {
        let mut lines = doc.lines().skip_while(|l| !l.starts_with("| code |"));
        let header = lines.next().unwrap_or("");
        let has_status = header.split('|').nth(2).map(str::trim) == Some("`status`");
        lines
            .skip(1)
            .take_while(|l| l.starts_with("| "))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                let code = cells.get(1).copied().unwrap_or("");
                let code = code
                    .parse()
                    .unwrap_or_else(|_| panic!("not an exit code: {code:?} in {l:?}"));
                let status = has_status.then(|| cells.get(2).copied().unwrap_or("").to_owned());
                (code, status)
            })
            .collect()
    }

    /// The codes of the line starting "When several apply", in its order.
    fn precedence_line(doc: &str) -> Vec<u8> {
        let line = doc
            .lines()
            .find(|l| l.starts_with("When several apply"))
            .expect("a 'When several apply' line");
        let list = line.rsplit(':').next().unwrap_or("");
        list.trim()
            .trim_end_matches('.')
            .split(',')
            .map(|c| {
                c.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("not an exit code: {c:?} in {line:?}"))
            })
            .collect()
    }

    /// The exit-code tables of SPEC and the README have one row per code,
    /// in increasing order, and every status's code is in them; SPEC's names
    /// each code's `status` as `RunStatus::as_str` does.
    #[test]
    fn every_exit_code_is_in_the_tables_of_spec_and_readme() {
        let mut all = ALL;
        all.sort_by_key(|s| s.code());
        let with_status: Vec<(u8, Option<String>)> = all
            .iter()
            .map(|s| (s.code(), Some(format!("`{}`", s.as_str()))))
            .collect();
        let codes_only: Vec<(u8, Option<String>)> = all.iter().map(|s| (s.code(), None)).collect();
        for (name, doc, want) in [
            (
                "docs/SPEC.md",
                include_str!("../../../docs/SPEC.md"),
                &with_status,
            ),
            ("README.md", include_str!("../../../README.md"), &codes_only),
        ] {
            assert_eq!(
                &exit_code_table(doc),
                want,
                "{name}'s exit-code table and RunStatus disagree"
            );
        }
    }

    /// "When several apply: 130, 4, 5, 1, 6, 3" in SPEC and the README is
    /// `RunStatus::rank`, highest first (success and invalid aside: invalid
    /// stops everything before anything runs).
    #[test]
    fn the_precedence_the_docs_state_is_the_codes() {
        let mut ranked: Vec<RunStatus> = ALL
            .into_iter()
            .filter(|s| !matches!(s, Success | Invalid))
            .collect();
        ranked.sort_by_key(|s| std::cmp::Reverse(s.rank()));
        let want: Vec<u8> = ranked.iter().map(|s| s.code()).collect();
        for (name, doc) in [
            ("docs/SPEC.md", include_str!("../../../docs/SPEC.md")),
            ("README.md", include_str!("../../../README.md")),
        ] {
            assert_eq!(precedence_line(doc), want, "{name}'s precedence line");
        }
    }

    #[test]
    fn codes_and_names_are_distinct() {
        let mut codes: Vec<u8> = ALL.iter().map(|s| s.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), ALL.len());
        for s in ALL {
            let json = serde_json::to_value(s).ok();
            assert_eq!(json, Some(serde_json::Value::from(s.as_str())));
        }
    }
}
