//! `plangate merge`: one report from the reports of `run --shard i/N`, pure.
//!
//! Refused: a report without a `shard` block, reports of different plans or
//! of different cuts (`partition_sha256`), a shard given twice, a missing
//! shard, a report whose steps do not match its shard block. Joined: steps
//! (back at their positions in the whole plan), findings (exact duplicates
//! once), the diff's files (sorted by path; a path changed in two shards
//! keeps the first shard's entry and says so in a note), usage (summed),
//! approvals. The status is every shard's combined by SPEC's precedence and
//! the exit code is its code.

use std::path::PathBuf;

use crate::model::RunStatus;
use crate::model::{DiffSummary, MergedShard, Report, ShardInfo, StepReport};

/// Why shard reports cannot be merged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
    #[error("no report to merge")]
    Empty,
    #[error(
        "{} is not a shard report (status {status}): only reports of `plangate run --shard i/N` can be merged",
        path.display()
    )]
    NotAShard { path: PathBuf, status: RunStatus },
    #[error("{} is a report of another plan (sha256 {sha}) than {} (sha256 {first_sha})", path.display(), first.display())]
    OtherPlan {
        path: PathBuf,
        sha: String,
        first: PathBuf,
        first_sha: String,
    },
    #[error(
        "{} was cut differently ({count} shards, partition {partition}) than {} ({first_count} shards, partition {first_partition}): give every shard the same --shard count and --timings file",
        path.display(),
        first.display()
    )]
    CutDifferently {
        path: PathBuf,
        count: usize,
        partition: String,
        first: PathBuf,
        first_count: usize,
        first_partition: String,
    },
    #[error("{} claims shard {index} of {count}", path.display())]
    BadIndex {
        path: PathBuf,
        index: usize,
        count: usize,
    },
    #[error("shard {index}/{count} is given twice: {} and {}", a.display(), b.display())]
    Twice {
        index: usize,
        count: usize,
        a: PathBuf,
        b: PathBuf,
    },
    #[error("missing shard(s) {} of {count}: merge needs the report of every shard", missing.join(", "))]
    Missing { missing: Vec<String>, count: usize },
    #[error("{} has {got} steps but its shard block lists {listed}", path.display())]
    StepCount {
        path: PathBuf,
        got: usize,
        listed: usize,
    },
    #[error("{}: step position {pos} is out of the plan or claimed by two shards", path.display())]
    StepPosition { path: PathBuf, pos: usize },
    #[error("the shards do not cover every step of the plan")]
    Uncovered,
}

/// Every report's shard block, checked: one plan, one cut, each shard once.
fn check_shards(reports: &[(PathBuf, Report)]) -> Result<Vec<ShardInfo>, MergeError> {
    let Some((first_path, _)) = reports.first() else {
        return Err(MergeError::Empty);
    };
    let mut infos: Vec<ShardInfo> = Vec::with_capacity(reports.len());
    for (path, r) in reports {
        let Some(s) = &r.shard else {
            return Err(MergeError::NotAShard {
                path: path.clone(),
                status: r.status,
            });
        };
        infos.push(s.clone());
    }
    let base = &infos[0];
    for ((path, _), s) in reports.iter().zip(&infos) {
        if s.plan_sha256 != base.plan_sha256 {
            return Err(MergeError::OtherPlan {
                path: path.clone(),
                sha: s.plan_sha256.clone(),
                first: first_path.clone(),
                first_sha: base.plan_sha256.clone(),
            });
        }
        if s.partition_sha256 != base.partition_sha256
            || s.count != base.count
            || s.plan_steps != base.plan_steps
        {
            return Err(MergeError::CutDifferently {
                path: path.clone(),
                count: s.count,
                partition: short(&s.partition_sha256).to_owned(),
                first: first_path.clone(),
                first_count: base.count,
                first_partition: short(&base.partition_sha256).to_owned(),
            });
        }
    }
    let mut seen: Vec<Option<usize>> = vec![None; base.count];
    for (k, s) in infos.iter().enumerate() {
        if s.index == 0 || s.index > base.count {
            return Err(MergeError::BadIndex {
                path: reports[k].0.clone(),
                index: s.index,
                count: base.count,
            });
        }
        if let Some(j) = seen[s.index - 1] {
            return Err(MergeError::Twice {
                index: s.index,
                count: base.count,
                a: reports[j].0.clone(),
                b: reports[k].0.clone(),
            });
        }
        seen[s.index - 1] = Some(k);
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            missing,
            count: base.count,
        });
    }
    Ok(infos)
}

/// The steps of every shard back at their positions in the whole plan.
fn place_steps(
    reports: &mut [(PathBuf, Report)],
    infos: &[ShardInfo],
    plan_steps: usize,
) -> Result<Vec<StepReport>, MergeError> {
    let mut slots: Vec<Option<StepReport>> = vec![None; plan_steps];
    for ((path, r), s) in reports.iter_mut().zip(infos) {
        if r.steps.len() != s.steps.len() {
            return Err(MergeError::StepCount {
                path: path.clone(),
                got: r.steps.len(),
                listed: s.steps.len(),
            });
        }
        for (step, &pos) in std::mem::take(&mut r.steps).into_iter().zip(&s.steps) {
            match slots.get_mut(pos) {
                Some(slot @ None) => *slot = Some(step),
                _ => {
                    return Err(MergeError::StepPosition {
                        path: path.clone(),
                        pos,
                    });
                }
            }
        }
    }
    slots
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or(MergeError::Uncovered)
}

/// Join shard reports (each with the file it came from, for messages).
pub(crate) fn merge(
    mut reports: Vec<(PathBuf, Report)>,
    run_id: String,
) -> Result<Report, MergeError> {
    let infos = check_shards(&reports)?;
    let base = infos[0].clone();
    let steps = place_steps(&mut reports, &infos, base.plan_steps)?;
    // Everything else.
    let mut order: Vec<usize> = (0..reports.len()).collect();
    order.sort_by_key(|&k| infos[k].index);
    let mut status = RunStatus::Success;
    let mut findings = Vec::new();
    let mut usage = crate::model::Usage::default();
    let mut approvals: Vec<String> = Vec::new();
    let mut merged = Vec::new();
    let mut diffs: Vec<(usize, DiffSummary)> = Vec::new();
    let mut diff_missing = false;
    let mut budget = None;
    let (mut started, mut finished, mut duration) = (None::<String>, None::<String>, 0u64);
    for &k in &order {
        let r = &reports[k].1;
        status = status.combine(r.status);
        for f in &r.findings {
            if !findings.contains(f) {
                findings.push(f.clone());
            }
        }
        usage.add(&r.usage);
        approvals.extend(r.approvals.iter().cloned());
        merged.push(MergedShard {
            index: infos[k].index,
            run_id: r.run_id.clone(),
            status: r.status,
        });
        match r.diff.clone() {
            Some(d) => diffs.push((infos[k].index, d)),
            None => diff_missing = true,
        }
        budget = budget.or_else(|| r.budget_exhausted.clone());
        if started.as_ref().is_none_or(|s| r.started_at < *s) {
            started = Some(r.started_at.clone());
        }
        if let Some(f) = &r.finished_at
            && finished.as_ref().is_none_or(|x| f > x)
        {
            finished = Some(f.clone());
        }
        duration = duration.max(r.duration_ms);
    }
    approvals.sort();
    approvals.dedup();
    let diff = merge_diffs(diffs, diff_missing);
    // In plan order, as the steps are.
    let partial_reasons: Vec<_> = steps
        .iter()
        .flat_map(|s| {
            order
                .iter()
                .flat_map(|&k| reports[k].1.partial_reasons.iter())
                .filter(|p| p.step == s.id)
                .cloned()
                .collect::<Vec<_>>()
        })
        .collect();
    let head = &reports[order[0]].1;
    Ok(Report {
        schema_version: head.schema_version,
        plangate_version: crate::version::VERSION.to_owned(),
        run_id,
        in_progress: reports.iter().any(|(_, r)| r.in_progress),
        plan: head.plan.clone(),
        status,
        exit_code: status.code(),
        conclusion: Some(status.conclusion(!partial_reasons.is_empty())),
        partial_reasons,
        strict: reports.iter().any(|(_, r)| r.strict),
        started_at: started.unwrap_or_default(),
        finished_at: finished,
        duration_ms: duration,
        dry_run: reports.iter().any(|(_, r)| r.dry_run),
        workspace: head.workspace.clone(),
        policy: head.policy.clone(),
        approvals,
        steps,
        findings,
        diff,
        usage,
        budget_exhausted: budget,
        // Shards run on different machines: each shard report keeps its own
        // sandbox level; the merged one does not pretend to know one.
        sandbox: None,
        git_credentials_withheld: Vec::new(),
        workspace_head: head.workspace_head.clone(),
        resumed_from: None,
        shard: Some(ShardInfo {
            index: 0,
            count: base.count,
            plan_sha256: base.plan_sha256,
            partition_sha256: base.partition_sha256,
            plan_steps: base.plan_steps,
            steps: Vec::new(),
            merged,
        }),
        inputs: head.inputs.clone(),
        untrusted_inputs: head.untrusted_inputs.clone(),
        inputs_sha256: head.inputs_sha256.clone(),
        publish: Vec::new(),
        errors: Vec::new(),
    })
}

fn short(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

/// Join the shards' diff blocks: files by path (first shard wins a path
/// changed twice, with a note), totals recomputed, notes kept.
fn merge_diffs(diffs: Vec<(usize, DiffSummary)>, some_missing: bool) -> Option<DiffSummary> {
    if diffs.is_empty() {
        return None;
    }
    let mut out = DiffSummary {
        method: diffs[0].1.method,
        ..DiffSummary::default()
    };
    let mut owner: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for (index, d) in diffs {
        for n in d.notes {
            if !out.notes.contains(&n) {
                out.notes.push(n);
            }
        }
        for f in d.files {
            if let Some(first) = owner.get(&f.path) {
                out.notes.push(format!(
                    "`{}` was changed by shard {first} and shard {index}; the entry of shard {first} is shown",
                    f.path
                ));
                continue;
            }
            owner.insert(f.path.clone(), index);
            out.files.push(f);
        }
    }
    if some_missing {
        out.notes
            .push("some shards recorded no diff; their changes are not shown".into());
    }
    out.files.sort_by(|a, b| a.path.cmp(&b.path));
    out.files_changed = out.files.len() as u64;
    out.insertions = out.files.iter().map(|f| f.insertions).sum();
    out.deletions = out.files.iter().map(|f| f.deletions).sum();
    Some(out)
}
