//! Which steps a failed run with `fail_fast: false` rolls back (pure).

/// The rollbacks of a failed run with `fail_fast: false`, newest completion
/// first. `deps[i]` are step `i`'s dependencies, `completed` the steps that
/// succeeded in completion order, `failed` those whose failure fails the run.
/// Keep = the completed steps no failed step depends on (directly or
/// transitively); protected = Keep and everything they depend on; rolled
/// back = the completed steps a failed step depends on that are not
/// protected (a kept step still stands on them).
pub(super) fn keep_going_rollbacks(
    deps: &[&[usize]],
    completed: &[usize],
    failed: &[usize],
) -> Vec<usize> {
    let ancestors = |seeds: &[usize]| {
        let mut seen = vec![false; deps.len()];
        let mut stack: Vec<usize> = seeds.to_vec();
        while let Some(i) = stack.pop() {
            for &d in deps.get(i).copied().unwrap_or_default() {
                if let Some(s) = seen.get_mut(d)
                    && !*s
                {
                    *s = true;
                    stack.push(d);
                }
            }
        }
        seen
    };
    let under_failed = ancestors(failed);
    let keep: Vec<usize> = completed
        .iter()
        .copied()
        .filter(|&i| !under_failed.get(i).copied().unwrap_or(false))
        .collect();
    let protected = ancestors(&keep);
    completed
        .iter()
        .rev()
        .copied()
        .filter(|&i| {
            under_failed.get(i).copied().unwrap_or(false)
                && !protected.get(i).copied().unwrap_or(false)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::keep_going_rollbacks;

    #[test]
    fn a_shared_ancestor_is_protected_an_exclusive_one_rolled_back() {
        // 0 setup -> 1 build-a -> 2 deploy-a (fails)
        // 0 setup -> 3 build-b -> 4 deploy-b (succeeds)
        // 5 cache (only deploy-a uses it); 6 unrelated.
        let deps: Vec<&[usize]> = vec![&[], &[0], &[1, 5], &[0], &[3], &[], &[]];
        let completed = [0, 5, 1, 3, 6, 4];
        assert_eq!(keep_going_rollbacks(&deps, &completed, &[2]), vec![1, 5]);
        // Nothing failed: nothing to roll back.
        assert!(keep_going_rollbacks(&deps, &completed, &[]).is_empty());
        // Both branches failed: every ancestor of a failure goes, newest first.
        let completed = [0, 5, 1, 3, 6];
        assert_eq!(
            keep_going_rollbacks(&deps, &completed, &[2, 4]),
            vec![3, 1, 5, 0]
        );
    }

    #[test]
    fn a_kept_step_after_a_failure_protects_what_it_stands_on() {
        // 0 -> 1 (fails); 0 -> 2; 3 (an `always()` step) depends on 1 and 2.
        // No failed step depends on 2 or 3: both are kept, and 0 under them.
        let deps: Vec<&[usize]> = vec![&[], &[0], &[0], &[1, 2]];
        assert_eq!(
            keep_going_rollbacks(&deps, &[0, 2, 3], &[1]),
            Vec::<usize>::new()
        );
        // 0 -> 1 (fails); 2 stands alone: 0 is rolled back, 2 is not.
        let deps: Vec<&[usize]> = vec![&[], &[0], &[]];
        assert_eq!(keep_going_rollbacks(&deps, &[0, 2], &[1]), vec![0]);
    }
}
