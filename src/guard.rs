//! The fail-close guard: the `plangate-guard` crate (crates/guard: pure, it
//! depends on no I/O crate), re-exported whole under its old name, plus the
//! one piece kept out of it: the JSON Schema check of `output: json` answers,
//! done by the `jsonschema` crate.

pub use plangate_guard::*;

/// Strict JSON for agent answers (`plangate_guard::json`), with the step's
/// JSON Schema checked by the `jsonschema` crate.
pub mod json {
    pub use plangate_guard::json::*;

    use serde_json::Value;

    use super::Rejection;

    /// `output: json`: the answer's single JSON value, validated against
    /// `schema` when given (`plangate_guard::json::parse_json`).
    pub fn parse_json(answer: &str, schema: Option<&Value>) -> Result<Value, Vec<Rejection>> {
        let schema = schema.map(Schema);
        plangate_guard::json::parse_json(answer, schema.as_ref().map(|s| s as &dyn SchemaCheck))
    }

    /// A step's JSON Schema, compiled by `jsonschema` when an answer is checked.
    struct Schema<'a>(&'a Value);

    impl SchemaCheck for Schema<'_> {
        fn errors(&self, value: &Value) -> Result<Vec<SchemaError>, String> {
            let validator = jsonschema::validator_for(self.0).map_err(|e| e.to_string())?;
            Ok(validator
                .iter_errors(value)
                .map(|err| SchemaError {
                    instance_path: err.instance_path().to_string(),
                    unexpected: match err.kind() {
                        jsonschema::error::ValidationErrorKind::AdditionalProperties {
                            unexpected,
                        } => unexpected.first().cloned(),
                        _ => None,
                    },
                    message: err.to_string(),
                })
                .collect())
        }
    }
}
