//! `plangate schema`: the JSON Schema of the plan format (or of a `--policy`
//! file), generated from the types that parse them.

use super::Outcome;
use crate::cli::SchemaArgs;
use crate::error::Error;
use crate::model::RunStatus;
use crate::plan::schema;

/// `plangate schema`.
pub(crate) fn run(args: &SchemaArgs) -> Outcome {
    let schema = if args.policy {
        schema::policy_schema()
    } else {
        schema::plan_schema()
    };
    let mut text =
        serde_json::to_vec_pretty(&schema).map_err(|e| Error::Stdout(std::io::Error::other(e)))?;
    text.push(b'\n');
    crate::output::stdout(&text).map_err(Error::Stdout)?;
    Ok(RunStatus::Success)
}
