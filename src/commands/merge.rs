//! `plangate merge`: join the reports of `run --shard i/N` into one (the
//! joining is `crate::merge`), write report.json, diff-summary.md and the
//! derived outputs, and publish like `run`.

use std::path::{Path, PathBuf};

use super::{Outcome, publish_ci, write_derived_outputs};
use crate::cli::MergeArgs;
use crate::error::Error;
use crate::model::Report;
use crate::{integrations, output, report, settings};

/// `plangate merge`.
pub(crate) fn run(args: &MergeArgs) -> Outcome {
    let gh = settings::github(&args.github);
    let gl = settings::gitlab(&args.gitlab, &args.github);
    let mut reports = Vec::with_capacity(args.reports.len());
    for p in &args.reports {
        reports.push((p.clone(), integrations::read_report(p)?));
    }
    let dirs: Vec<PathBuf> = args
        .reports
        .iter()
        .map(|p| p.parent().map(Path::to_path_buf).unwrap_or_default())
        .collect();
    let shard_index: Vec<usize> = reports
        .iter()
        .map(|(_, r)| r.shard.as_ref().map_or(0, |s| s.index))
        .collect();
    let merged = crate::merge::merge(reports, uuid::Uuid::now_v7().to_string())?;
    std::fs::create_dir_all(&args.out).map_err(|source| Error::WriteOutput {
        path: args.out.clone(),
        source,
    })?;
    let summary = diff_summary(&merged, &dirs, &shard_index);
    let json = serde_json::to_string_pretty(&merged).unwrap_or_default() + "\n";
    for (name, text) in [
        ("report.json", json.as_str()),
        ("diff-summary.md", summary.as_str()),
    ] {
        let path = args.out.join(name);
        report::write_text_atomic(&path, text)
            .map_err(|source| Error::WriteOutput { path, source })?;
    }
    write_derived_outputs(args.junit.as_deref(), &args.out);
    if !args.quiet {
        output::stderr(&format!(
            "plangate: merged {} shard report(s) of plan `{}`: {} steps, status {} (exit {})\nreport: {}\n",
            args.reports.len(),
            merged.plan.id.as_deref().unwrap_or("?"),
            merged.steps.len(),
            merged.status.as_str(),
            merged.exit_code,
            args.out.join("report.json").display()
        ));
    }
    publish_ci(&args.out, (&gh, &gl), args.quiet);
    Ok(merged.status)
}

/// diff-summary.md: each shard's, under its heading, in shard order.
fn diff_summary(merged: &Report, dirs: &[PathBuf], shard_index: &[usize]) -> String {
    let mut order: Vec<usize> = (0..dirs.len()).collect();
    order.sort_by_key(|&k| shard_index[k]);
    let mut summary = format!(
        "# Workspace changes ({} shards merged)\n\n",
        merged.shard.as_ref().map_or(0, |s| s.count)
    );
    for k in order {
        let text = std::fs::read_to_string(dirs[k].join("diff-summary.md"))
            .unwrap_or_else(|_| "_no diff summary in this shard's output_\n".into());
        summary.push_str(&format!("## Shard {}\n\n{text}\n", shard_index[k]));
    }
    summary
}
