//! A long agent call beats at the run's heartbeat interval: elapsed time,
//! and for a CLI printing an event stream, the events, tokens and cost it
//! reported so far (read from its growing stdout by `cli::live::Tail`).

use std::future::Future;
use std::time::Instant;

use super::provider::cli::{self, live::Tail};
use crate::format::agent::ProviderKind;
use crate::tools::params::agent::AgentAction;
use crate::tools::{Beat, StepContext};

/// Await `call`, beating through the step's pulse while it runs.
pub(super) async fn around<R>(
    call: impl Future<Output = R>,
    a: &AgentAction,
    ctx: &StepContext,
    attempt: u32,
    since: Instant,
) -> R {
    let Some(pulse) = ctx.pulse.clone() else {
        return call.await;
    };
    let mut tail = a
        .agent
        .output_format
        .filter(|f| a.provider == ProviderKind::Command && f.is_stream())
        .map(|f| Tail::new(cli::stdout_file(&ctx.artifacts_dir, attempt), f));
    let start = tokio::time::Instant::now() + pulse.every;
    let mut ticks = tokio::time::interval_at(start, pulse.every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tokio::pin!(call);
    loop {
        tokio::select! {
            r = &mut call => return r,
            _ = ticks.tick() => {
                let p = tail.as_mut().map(Tail::poll).unwrap_or_default();
                pulse.beat(Beat {
                    elapsed: since.elapsed(),
                    attempt,
                    events: p.events,
                    tokens: p.tokens,
                    cost_usd: p.cost_usd,
                });
            }
        }
    }
}
