//! The JSON Schema generator settings every plan-format schema uses, and the
//! property names a type's schema allows.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::Value;

/// A generator with the settings of every plangate schema (draft 2020-12).
pub(crate) fn generator() -> SchemaGenerator {
    SchemaGenerator::new(SchemaSettings::draft2020_12())
}

/// The property names a type's schema allows (for "did you mean" help).
pub(crate) fn allowed_keys<T: JsonSchema>() -> Vec<String> {
    let schema = generator().into_root_schema_for::<T>().to_value();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}
