//! JSON Schemas generated from the plan types (`plangate schema`).
//!
//! The loader validates every plan against [`plan_schema`] before it
//! deserializes it, so the schema an editor uses and the rules plangate
//! applies are the same thing.

use serde_json::{Value, json};

use super::raw::PlanFile;
pub(crate) use crate::format::schema::allowed_keys;
use crate::format::schema::generator;
use crate::model::PolicyBlock;
use crate::model::ToolName;
use crate::tools::registry::ToolSpecOf;

/// The URL-less id of the plan schema.
pub(crate) const PLAN_SCHEMA_ID: &str = "https://plangate.dev/schema/plan-v1.json";

/// The JSON Schema of a plan file, with each tool's parameters attached to `tool`.
pub(crate) fn plan_schema() -> Value {
    let mut generator = generator();
    let params: Vec<(ToolName, Value)> = ToolName::ALL
        .iter()
        .map(|t| (*t, t.spec().params_schema(&mut generator).to_value()))
        .collect();
    let root = generator.into_root_schema_for::<PlanFile>();
    let mut root = root.to_value();
    strip_formats(&mut root);
    if let Some(obj) = root.as_object_mut() {
        obj.insert("$id".into(), Value::from(PLAN_SCHEMA_ID));
    }
    let tool_params: Vec<Value> = params
        .into_iter()
        .map(|(tool, params)| {
            let required: &[&str] = if tool.spec().params_required() {
                &["parameters"]
            } else {
                &[]
            };
            json!({
                "if": {"properties": {"tool": {"const": tool.as_str()}}, "required": ["tool"]},
                "then": {"properties": {"parameters": params}, "required": required}
            })
        })
        .collect();
    if let Some(step) = root
        .pointer_mut("/$defs/StepDef")
        .and_then(Value::as_object_mut)
    {
        step.insert("allOf".into(), Value::Array(tool_params));
    }
    root
}

/// The JSON Schema of a `--policy` file.
pub(crate) fn policy_schema() -> Value {
    let mut schema = generator().into_root_schema_for::<PolicyBlock>().to_value();
    strip_formats(&mut schema);
    schema
}

/// The `format`s JSON Schema 2020-12 defines; any other (schemars writes
/// `uint16`/`uint32`/`uint64`/`int64`/`double` for Rust numbers) is
/// refused by strict validators such as ajv, so it is left out: the
/// `type: integer` and `minimum` beside it already say what is allowed.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

fn strip_formats(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let non_standard = map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| !STANDARD_FORMATS.contains(&f));
            // (`format` as a property name, under `properties`, is not a keyword)
            if non_standard {
                map.remove("format");
            }
            map.values_mut().for_each(strip_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_formats),
        _ => {}
    }
}
