//! `plangate report`: render a saved report.json again (Markdown, JUnit,
//! SARIF, JSON, GitLab secret detection), and publish it to GitHub for a
//! later CI job.

use super::{Outcome, print_notices};
use crate::cli::{ReportArgs, ReportFormat};
use crate::error::Error;
use crate::model::RunStatus;
use crate::report::render;
use crate::{github, settings};

/// `plangate report`.
pub(crate) fn run(args: &ReportArgs) -> Outcome {
    let report = crate::integrations::read_report(&args.report)?;
    if args.publish_github {
        let gh = settings::github(&args.github);
        if gh.token.is_none() {
            return Err(Error::NoToken);
        }
        let notices = github::publish(&report, &gh);
        let dir = args
            .report
            .parent()
            .filter(|d| d.join("audit.jsonl").is_file());
        print_notices(dir, &notices, false);
        if notices
            .iter()
            .any(|(_, n)| matches!(n, github::Notice::Failed(_)))
        {
            return Err(Error::PublishFailed);
        }
    }
    let Some(format) = args.format else {
        return Ok(RunStatus::Success);
    };
    // Findings in run output are under the folder report.json is in.
    let out_dir = args.report.parent().unwrap_or(std::path::Path::new("."));
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    let body = match format {
        ReportFormat::Markdown => render::markdown(&report),
        ReportFormat::Junit => render::junit(&report),
        ReportFormat::Sarif => pretty(&render::sarif(&report, out_dir)),
        ReportFormat::Json => pretty(&render::json(&report)),
        ReportFormat::GitlabSecretDetection => {
            pretty(&render::gitlab_secret_detection(&report, out_dir))
        }
    };
    crate::output::stdout(body.as_bytes()).map_err(Error::Stdout)?;
    Ok(RunStatus::Success)
}
