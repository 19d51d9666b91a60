//! What every step of a run shares: the budget, its use so far, and why
//! running steps are being stopped (a signal or an exhausted budget).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::model::{BudgetBlock, Usage};

/// State every step of a run shares: the budget and why the run is stopping.
#[derive(Debug)]
pub(crate) struct RunShared {
    /// Limits for the run.
    pub budget: BudgetBlock,
    /// `policy.step_budget`: every agent step's default and cap.
    pub step_cap: crate::model::StepBudget,
    /// When the run started.
    pub started: Instant,
    usage: Mutex<Usage>,
    exhausted: Mutex<Option<String>>,
    interrupted: AtomicBool,
    /// The paths each repository of the workspace holds, kept while its refs stay.
    pub git_stores: super::git_store::Cache,
}

impl RunShared {
    /// A fresh run.
    pub(crate) fn new(budget: BudgetBlock) -> RunShared {
        RunShared {
            budget,
            step_cap: crate::model::StepBudget::default(),
            started: Instant::now(),
            usage: Mutex::new(Usage::default()),
            exhausted: Mutex::new(None),
            interrupted: AtomicBool::new(false),
            git_stores: super::git_store::Cache::default(),
        }
    }

    /// With `policy.step_budget` (each agent step's default and cap).
    pub(crate) fn with_step_cap(mut self, cap: crate::model::StepBudget) -> RunShared {
        self.step_cap = cap;
        self
    }

    /// The budget a step runs with: its own (and its agent's) lowered to `policy.step_budget`.
    pub(crate) fn step_budget(&self, own: crate::model::StepBudget) -> crate::model::StepBudget {
        own.narrowest(self.step_cap)
    }

    /// Usage so far.
    pub(crate) fn usage(&self) -> Usage {
        self.usage.lock().map(|u| *u).unwrap_or_default()
    }

    /// Record an agent call's usage; returns why the budget is now exhausted, if it is.
    pub(crate) fn add_usage(&self, u: &Usage) -> Option<String> {
        if let Ok(mut total) = self.usage.lock() {
            total.add(u);
        }
        self.check()
    }

    /// Why the budget would be exhausted with `extra` more (a CLI's calls
    /// measured so far at plangate's model API endpoint), if it would.
    pub(crate) fn exhausted_with(&self, extra: &Usage) -> Option<String> {
        if let Some(why) = self.check() {
            return Some(why);
        }
        let mut u = self.usage();
        u.add(extra);
        if let Some(max) = self.budget.max_tokens.filter(|&m| u.tokens() >= m) {
            Some(format!(
                "token budget exhausted: {} of {max} tokens used",
                u.tokens()
            ))
        } else {
            self.budget
                .max_cost_usd
                .filter(|&m| u.cost_usd >= m)
                .map(|max| {
                    format!(
                        "cost budget exhausted: ${:.4} of ${max:.4} spent",
                        u.cost_usd
                    )
                })
        }
    }

    /// Why the budget is exhausted, if it is (tokens, cost, wall time).
    pub(crate) fn check(&self) -> Option<String> {
        if let Some(why) = self.exhausted.lock().ok().and_then(|e| e.clone()) {
            return Some(why);
        }
        let u = self.usage();
        let why = if let Some(max) = self.budget.max_tokens.filter(|&m| u.tokens() >= m) {
            Some(format!(
                "token budget exhausted: {} of {max} tokens used",
                u.tokens()
            ))
        } else if let Some(max) = self.budget.max_cost_usd.filter(|&m| u.cost_usd >= m) {
            Some(format!(
                "cost budget exhausted: ${:.4} of ${max:.4} spent",
                u.cost_usd
            ))
        } else {
            self.budget
                .max_wall_seconds
                .filter(|&m| self.started.elapsed() >= Duration::from_secs(m))
                .map(|m| format!("wall-time budget exhausted: the run passed {m} s"))
        };
        if let Some(w) = &why
            && let Ok(mut e) = self.exhausted.lock()
        {
            e.get_or_insert_with(|| w.clone());
        }
        why
    }

    /// Mark the run interrupted by a signal.
    pub(crate) fn set_interrupted(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
    }

    /// Whether a signal interrupted the run.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Why running steps are being stopped.
    pub(crate) fn stop_reason(&self) -> String {
        if self.interrupted() {
            "interrupted".to_owned()
        } else if let Some(why) = self.exhausted.lock().ok().and_then(|e| e.clone()) {
            why
        } else {
            "stopped".to_owned()
        }
    }
}
