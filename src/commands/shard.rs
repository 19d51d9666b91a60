//! `plangate shard`: split the expanded plan into shards for a CI matrix
//! (the partition is `crate::shard`) and print it as [`ShardOutput`] (JSON),
//! GitHub's `strategy.matrix` include list, or a GitLab child pipeline.

use schemars::JsonSchema;
use serde::Serialize;

use super::Outcome;
use crate::cli::{ShardArgs, ShardFormat};
use crate::error::Error;
use crate::model::RunStatus;
use crate::plan::Plan;
use crate::shard::{Partition, partition_of};

/// `shard --format json`: the whole partition.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ShardOutput<'a> {
    pub plan: ShardPlan<'a>,
    /// Steps once matrices are expanded.
    pub steps: usize,
    /// Connected components of the dependency graph.
    pub components: usize,
    /// `--jobs`.
    pub jobs: u32,
    /// Shards made (at most `jobs`, at most `components`).
    pub count: usize,
    /// `timings` or `steps`.
    pub weighted_by: &'static str,
    pub partition_sha256: &'a str,
    pub shards: Vec<ShardEntry<'a>>,
}

/// Which plan was cut.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ShardPlan<'a> {
    pub id: &'a str,
    pub path: String,
    pub sha256: &'a str,
}

/// One shard.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ShardEntry<'a> {
    /// 1-based.
    pub index: usize,
    /// `i/N`, what `run --shard` takes.
    pub shard: String,
    /// How many steps.
    pub steps: usize,
    /// Its weight (steps, or milliseconds with timings).
    pub weight: u64,
    /// Its step ids, in plan order.
    pub ids: Vec<&'a str>,
}

/// `shard --format github`: the value for `fromJSON` in `strategy.matrix`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GithubMatrix {
    pub include: Vec<GithubJob>,
}

/// One matrix job.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GithubJob {
    pub shard: String,
    pub index: usize,
    pub steps: usize,
}

/// `plangate shard`.
pub(crate) fn run(args: &ShardArgs) -> Outcome {
    let plan = crate::plan::load_plan_file(&args.plan).map_err(Error::Invalid)?;
    let p = partition_of(&plan, args.jobs as usize, args.timings.as_deref())?;
    if p.components == 1 {
        crate::output::line(format_args!(
            "plangate: plan `{}` is one connected component ({} steps): it cannot be split, so it is one shard",
            plan.id,
            plan.steps.len()
        ));
    } else {
        crate::output::line(format_args!(
            "plangate: plan `{}`: {} steps in {} components -> {} shard(s)",
            plan.id,
            plan.steps.len(),
            p.components,
            p.count
        ));
    }
    let out = to_json(&plan, &p, args);
    let text = match args.format {
        ShardFormat::Json => sorted(&out, serde_json::to_string_pretty),
        ShardFormat::Github => {
            let include = out
                .shards
                .iter()
                .map(|s| GithubJob {
                    shard: s.shard.clone(),
                    index: s.index,
                    steps: s.steps,
                })
                .collect();
            sorted(&GithubMatrix { include }, serde_json::to_string)
        }
        ShardFormat::Gitlab => gitlab(&plan, &p, &args.gitlab_template),
    };
    crate::output::stdout(text.as_bytes()).map_err(Error::Stdout)?;
    Ok(RunStatus::Success)
}

/// JSON with its keys sorted (through `serde_json::Value`, as the output has
/// always been), and a newline.
fn sorted<T: Serialize>(
    v: &T,
    to_string: fn(&serde_json::Value) -> serde_json::Result<String>,
) -> String {
    serde_json::to_value(v)
        .and_then(|v| to_string(&v))
        .unwrap_or_default()
        + "\n"
}

/// The partition as [`ShardOutput`].
fn to_json<'a>(plan: &'a Plan, p: &'a Partition, args: &ShardArgs) -> ShardOutput<'a> {
    let shards = (0..p.count)
        .map(|s| {
            let ids: Vec<&str> = p
                .steps_of(s)
                .into_iter()
                .map(|i| plan.steps[i].id.as_str())
                .collect();
            ShardEntry {
                index: s + 1,
                shard: format!("{}/{}", s + 1, p.count),
                steps: ids.len(),
                weight: p.weights[s],
                ids,
            }
        })
        .collect();
    ShardOutput {
        plan: ShardPlan {
            id: &plan.id,
            path: plan.path.display().to_string(),
            sha256: &plan.sha256,
        },
        steps: plan.steps.len(),
        components: p.components,
        jobs: args.jobs,
        count: p.count,
        weighted_by: if args.timings.is_some() {
            "timings"
        } else {
            "steps"
        },
        partition_sha256: &p.sha256,
        shards,
    }
}

/// A GitLab child pipeline running each shard through the `.plangate-shard` template.
fn gitlab(plan: &Plan, p: &Partition, template: &str) -> String {
    let list: Vec<String> = (0..p.count)
        .map(|s| format!("\"{}/{}\"", s + 1, p.count))
        .collect();
    let template = serde_json::to_string(template).unwrap_or_else(|_| "\"\"".into());
    format!(
        "# Generated by `plangate shard`: plan `{}` (sha256 {}), {} steps in {} component(s), {} shard(s).\n\
         include:\n  - local: {template}\n\n\
         plangate-shard:\n  extends: .plangate-shard\n  parallel:\n    matrix:\n      - PLANGATE_SHARD: [{}]\n",
        plan.id,
        plan.sha256,
        plan.steps.len(),
        p.components,
        p.count,
        list.join(", ")
    )
}
