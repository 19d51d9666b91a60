//! Splitting an expanded plan into shards for the CI's own matrix (pure, but
//! for reading a timings report).
//!
//! The dependency graph is cut along its connected components (union-find),
//! so a chain never splits and every shard is closed under dependencies.
//! Components are ordered by weight (heaviest first), ties by their first
//! step's position; each goes to the lightest shard so far (ties: the lowest
//! shard number) — greedy LPT. The same plan, job count and weights give the
//! same partition on every machine; `partition_sha256` names it, so `merge`
//! can refuse shards cut differently.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::model::ShardInfo;
use crate::plan::Plan;

/// Weight of a step with no recorded duration when timings are used and none is known.
pub(crate) const DEFAULT_WEIGHT_MS: u64 = 1_000;

/// A partition of the steps into shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Partition {
    /// Shard of each step (0-based), in plan order.
    pub shard_of: Vec<usize>,
    /// How many shards (at most the jobs asked for, at most the components).
    pub count: usize,
    /// How many connected components the graph has.
    pub components: usize,
    /// Each shard's total weight.
    pub weights: Vec<u64>,
    /// sha256 over the plan's hash and the assignment, hex.
    pub sha256: String,
}

impl Partition {
    /// The steps of shard `s` (0-based), in plan order.
    pub(crate) fn steps_of(&self, s: usize) -> Vec<usize> {
        (0..self.shard_of.len())
            .filter(|&i| self.shard_of[i] == s)
            .collect()
    }
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// Partition steps with dependencies `deps` (indices) and `weights` into at most `jobs` shards.
pub(crate) fn partition(
    plan_sha256: &str,
    deps: &[Vec<usize>],
    weights: &[u64],
    jobs: usize,
) -> Partition {
    let n = deps.len();
    let mut parent: Vec<usize> = (0..n).collect();
    for (i, ds) in deps.iter().enumerate() {
        for &d in ds {
            if d >= n {
                continue;
            }
            let (a, b) = (find(&mut parent, i), find(&mut parent, d));
            if a != b {
                // The smaller index becomes the root: a component is named by its first step.
                let (lo, hi) = if a < b { (a, b) } else { (b, a) };
                parent[hi] = lo;
            }
        }
    }
    let mut comp_of = vec![0usize; n];
    let mut comps: Vec<(u64, usize)> = Vec::new(); // (weight, first step)
    let mut index: HashMap<usize, usize> = HashMap::new();
    for (i, slot) in comp_of.iter_mut().enumerate() {
        let r = find(&mut parent, i);
        let c = *index.entry(r).or_insert_with(|| {
            comps.push((0, i));
            comps.len() - 1
        });
        *slot = c;
        comps[c].0 = comps[c]
            .0
            .saturating_add(weights.get(i).copied().unwrap_or(1));
    }
    let count = jobs.max(1).min(comps.len().max(1));
    let mut order: Vec<usize> = (0..comps.len()).collect();
    order.sort_by_key(|&c| (Reverse(comps[c].0), comps[c].1));
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = (0..count).map(|s| Reverse((0, s))).collect();
    let mut shard_of_comp = vec![0usize; comps.len()];
    let mut loads = vec![0u64; count];
    for c in order {
        let Some(Reverse((load, s))) = heap.pop() else {
            break;
        };
        shard_of_comp[c] = s;
        let load = load.saturating_add(comps[c].0);
        loads[s] = load;
        heap.push(Reverse((load, s)));
    }
    let shard_of: Vec<usize> = comp_of.iter().map(|&c| shard_of_comp[c]).collect();
    let mut h = Sha256::new();
    h.update(plan_sha256.as_bytes());
    h.update(format!(":{count}:").as_bytes());
    for s in &shard_of {
        h.update(format!("{s},").as_bytes());
    }
    Partition {
        shard_of,
        count,
        components: comps.len(),
        weights: loads,
        sha256: hex::encode(h.finalize()),
    }
}

/// Weights from recorded durations (step id -> ms); unknown steps get the
/// median of the known ones (or [`DEFAULT_WEIGHT_MS`]). Every weight is at least 1.
pub(crate) fn weights_from_timings(ids: &[&str], timings: &HashMap<String, u64>) -> Vec<u64> {
    let mut known: Vec<u64> = ids
        .iter()
        .filter_map(|id| timings.get(*id).copied())
        .collect();
    known.sort_unstable();
    let default = known
        .get(known.len() / 2)
        .copied()
        .unwrap_or(DEFAULT_WEIGHT_MS);
    ids.iter()
        .map(|id| timings.get(*id).copied().unwrap_or(default).max(1))
        .collect()
}

/// Why a plan cannot be cut as asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShardError {
    /// Not `i/N` with 1 <= i <= N.
    #[error("`{0}` is not a shard: use `i/N`, e.g. `2/4` (1 <= i <= N)")]
    BadSpec(String),
    /// The timings report cannot be used.
    #[error("timings: {0}")]
    Timings(#[source] crate::integrations::ReadReportError),
    /// `--shard i/N` with N other than the number of shards the plan splits into.
    #[error(
        "the plan has {components} connected component(s), so it splits into {count} shard(s), not {asked}; run `plangate shard` and use the shards it prints"
    )]
    Count {
        components: usize,
        count: usize,
        asked: usize,
    },
}

/// Parse `i/N` (1-based).
pub(crate) fn parse_shard(spec: &str) -> Result<(usize, usize), ShardError> {
    let bad = || ShardError::BadSpec(spec.to_owned());
    let (a, b) = spec.trim().split_once('/').ok_or_else(bad)?;
    let i: usize = a.trim().parse().map_err(|_| bad())?;
    let n: usize = b.trim().parse().map_err(|_| bad())?;
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

/// The partition of `plan` into at most `jobs` shards, weighted by step
/// count or by the durations of the `timings` report.
pub(crate) fn partition_of(
    plan: &Plan,
    jobs: usize,
    timings: Option<&Path>,
) -> Result<Partition, ShardError> {
    let weights = match timings {
        None => vec![1; plan.steps.len()],
        Some(p) => {
            let r = crate::integrations::read_report(p).map_err(ShardError::Timings)?;
            let t: HashMap<String, u64> = r
                .steps
                .into_iter()
                .filter(|s| s.started_at.is_some())
                .map(|s| (s.id, s.duration_ms))
                .collect();
            let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
            weights_from_timings(&ids, &t)
        }
    };
    let deps: Vec<Vec<usize>> = plan.steps.iter().map(|s| s.deps.clone()).collect();
    Ok(partition(&plan.sha256, &deps, &weights, jobs))
}

/// `run --shard i/N`: the plan restricted to shard i, and the report's shard block.
pub(crate) fn shard_plan(
    plan: &Plan,
    spec: &str,
    timings: Option<&Path>,
) -> Result<(Plan, ShardInfo), ShardError> {
    let (i, n) = parse_shard(spec)?;
    let p = partition_of(plan, n, timings)?;
    if p.count != n {
        return Err(ShardError::Count {
            components: p.components,
            count: p.count,
            asked: n,
        });
    }
    let keep: Vec<bool> = p.shard_of.iter().map(|&s| s == i - 1).collect();
    let steps = p.steps_of(i - 1);
    let info = ShardInfo {
        index: i,
        count: n,
        plan_sha256: plan.sha256.clone(),
        partition_sha256: p.sha256.clone(),
        plan_steps: plan.steps.len(),
        steps,
        merged: Vec::new(),
    };
    Ok((plan.restricted(&keep), info))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four components: {0,1,2} chain, {3}, {4,5}, {6}.
    fn graph() -> Vec<Vec<usize>> {
        vec![vec![], vec![0], vec![1], vec![], vec![], vec![4], vec![]]
    }

    #[test]
    fn components_never_split_and_shards_balance() {
        let p = partition("h", &graph(), &[1; 7], 2);
        assert_eq!(p.components, 4);
        assert_eq!(p.count, 2);
        assert_eq!(p.shard_of[0], p.shard_of[1]);
        assert_eq!(p.shard_of[1], p.shard_of[2]);
        assert_eq!(p.shard_of[4], p.shard_of[5]);
        // LPT: chain (3) -> shard 0, pair (2) -> shard 1, then the singles to the lighter.
        assert_eq!(p.weights.iter().sum::<u64>(), 7);
        assert!(p.weights.iter().max().copied().unwrap_or(0) <= 4);
        assert_eq!(p.steps_of(0).len() + p.steps_of(1).len(), 7);
    }

    #[test]
    fn deterministic_and_capped_by_components() {
        let a = partition("h", &graph(), &[1; 7], 10);
        let b = partition("h", &graph(), &[1; 7], 10);
        assert_eq!(a, b);
        assert_eq!(a.count, 4);
        // Asking for exactly the component count cuts the same way.
        assert_eq!(partition("h", &graph(), &[1; 7], 4).shard_of, a.shard_of);
        // Another plan hash names another partition.
        assert_ne!(partition("g", &graph(), &[1; 7], 10).sha256, a.sha256);
        let one = partition("h", &[vec![], vec![0], vec![1]], &[1; 3], 8);
        assert_eq!((one.count, one.components), (1, 1));
    }

    #[test]
    fn timings_move_the_balance() {
        // Step 3 alone weighs as much as everything else.
        let w = [1, 1, 1, 10, 1, 1, 1];
        let p = partition("h", &graph(), &w, 2);
        let s3 = p.shard_of[3];
        assert_eq!(p.steps_of(s3), vec![3]);
        let t: HashMap<String, u64> = [("a".to_owned(), 10), ("b".to_owned(), 30)].into();
        assert_eq!(weights_from_timings(&["a", "b", "c"], &t), vec![10, 30, 30]);
        assert_eq!(
            weights_from_timings(&["x"], &HashMap::new()),
            vec![DEFAULT_WEIGHT_MS]
        );
    }

    #[test]
    fn shard_specs() {
        assert_eq!(parse_shard("2/4").ok(), Some((2, 4)));
        for bad in ["0/4", "5/4", "x", "1/0", "1-2", ""] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
