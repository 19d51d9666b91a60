//! `--steps`: which steps a run executes. `3` (1-based position), `2-5`
//! (inclusive range), `lint` (id), comma-separated and mixed.

use crate::plan::Plan;

/// Why a `--steps` value selects nothing sensible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum StepsError {
    #[error("`{0}` is not a step position")]
    NotAPosition(String),
    #[error("step position {k} is out of range: the plan has {n} steps (1-{n})")]
    OutOfRange { k: usize, n: usize },
    #[error("--steps is empty")]
    Empty,
    #[error("empty item in --steps `{0}`")]
    EmptyItem(String),
    #[error("range `{0}` runs backwards")]
    Backwards(String),
    #[error("no step `{item}` in the plan{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    NoStep {
        item: String,
        suggestion: Option<String>,
    },
}

/// Parse a `--steps` value into a per-step selection.
pub(crate) fn parse_steps(spec: &str, plan: &Plan) -> Result<Vec<bool>, StepsError> {
    let n = plan.steps.len();
    let mut sel = vec![false; n];
    let position = |s: &str| -> Result<usize, StepsError> {
        let k: usize = s
            .trim()
            .parse()
            .map_err(|_| StepsError::NotAPosition(s.to_owned()))?;
        if k == 0 || k > n {
            return Err(StepsError::OutOfRange { k, n });
        }
        Ok(k - 1)
    };
    if spec.trim().is_empty() {
        return Err(StepsError::Empty);
    }
    for item in split_list(spec) {
        if item.is_empty() {
            return Err(StepsError::EmptyItem(spec.to_owned()));
        }
        if let Some(i) = plan.index_of(item) {
            sel[i] = true;
        } else if plan.steps.iter().any(|s| s.template == item) {
            for s in plan.steps.iter().filter(|s| s.template == item) {
                sel[s.index] = true;
            }
        } else if item.chars().all(|c| c.is_ascii_digit()) {
            sel[position(item)?] = true;
        } else if let Some((a, b)) = item.split_once('-')
            && a.trim().chars().all(|c| c.is_ascii_digit())
            && b.trim().chars().all(|c| c.is_ascii_digit())
        {
            let (a, b) = (position(a)?, position(b)?);
            if a > b {
                return Err(StepsError::Backwards(item.to_owned()));
            }
            sel[a..=b].iter_mut().for_each(|s| *s = true);
        } else {
            let ids = plan.steps.iter().map(|s| s.id.as_str());
            return Err(StepsError::NoStep {
                item: item.to_owned(),
                suggestion: crate::plan::diag::did_you_mean(item, ids).map(str::to_owned),
            });
        }
    }
    Ok(sel)
}

/// Split a comma-separated list, keeping commas inside `[...]`; items trimmed.
pub(crate) fn split_list(spec: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in spec.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(spec[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(spec[start..].trim());
    out
}

#[cfg(test)]
mod tests {
    use super::{parse_steps, split_list};
    use crate::plan::load_plan_str as load;

    #[test]
    fn lists_keep_commas_inside_brackets() {
        assert_eq!(
            split_list("a, t[os=l,pkg=a] ,b"),
            vec!["a", "t[os=l,pkg=a]", "b"]
        );
        assert_eq!(split_list(""), vec![""]);
    }

    #[test]
    fn matrix_templates_select_their_expansions() {
        let plan = load(
            "t.yaml",
            "version: 1\nid: t\nsteps:\n- {id: a, tool: bash, matrix: {k: [x, y]}, parameters: {command: 'true'}}\n- {id: b, tool: bash, parameters: {command: 'true'}}\n",
        )
        .map_err(|e| format!("{e:?}"));
        let Ok(plan) = plan else { panic!("{plan:?}") };
        assert_eq!(parse_steps("a", &plan), Ok(vec![true, true, false]));
        assert_eq!(parse_steps("a[k=y],b", &plan), Ok(vec![false, true, true]));
    }
    use crate::plan::load_plan_str;

    #[test]
    fn forms() {
        let plan = load_plan_str(
            "t.yaml",
            "version: 1\nid: t\nsteps:\n- {id: a, tool: bash, parameters: {command: 'true'}}\n- {id: b, tool: bash, parameters: {command: 'true'}}\n- {id: c-1, tool: bash, parameters: {command: 'true'}}\n",
        )
        .map_err(|e| format!("{e:?}"));
        let Ok(plan) = plan else { panic!("{plan:?}") };
        assert_eq!(parse_steps("2", &plan), Ok(vec![false, true, false]));
        assert_eq!(parse_steps("1-2", &plan), Ok(vec![true, true, false]));
        assert_eq!(parse_steps("a,c-1", &plan), Ok(vec![true, false, true]));
        assert!(parse_steps("0", &plan).is_err());
        assert!(parse_steps("4", &plan).is_err());
        assert!(parse_steps("3-1", &plan).is_err());
        assert!(parse_steps("x", &plan).is_err());
        assert!(parse_steps("", &plan).is_err());
    }
}
