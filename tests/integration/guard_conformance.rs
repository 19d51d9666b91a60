//! Conformance against the json-repair peers' test data
//! (`tests/fixtures/conformance/json-repair-cases.jsonl`, 642 cases from
//! json_repair and jsonrepair; see /work/shared/conformance/json-repair/README.md).
//!
//! Every `input` goes to `parse_json(input, None)`. The peer's value is the
//! json_repair `expected` value (`return_objects: true`), else the expected
//! text parsed as JSON (no value when it does not parse or the peer throws).
//! Outcomes: exact (we accept, same value), rejected, different (we accept
//! something else, or accept what the peer refuses). Unjustified `different`
//! must be 0; the justified ones are listed with their reason.

use plangate::guard::json::parse_json;
use serde_json::Value;

/// Inputs that are prose followed by exactly one JSON value, which the peer throws on.
const PROSE_BEFORE_VALUE: &[&str] = &["callback {}"];

#[test]
fn json_repair_peer_cases() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/conformance/json-repair-cases.jsonl"
    );
    let data = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (mut exact, mut rejected, mut no_peer_value) = (0, 0, 0);
    let mut different = Vec::new();
    let mut justified = Vec::new();
    let mut total = 0;
    for (n, line) in data.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        total += 1;
        let row: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        let input = row["input"]
            .as_str()
            .unwrap_or_else(|| panic!("line {}: no input", n + 1));
        let logging = row["options"]["logging"] == Value::Bool(true);
        // With `logging`, json_repair returns (result, log): the result is the first element.
        let expected = if logging {
            row["expected"][0].clone()
        } else {
            row["expected"].clone()
        };
        let peer: Option<Value> = match (
            row["source"].as_str(),
            row.get("return_objects"),
            row.get("kind").and_then(Value::as_str),
        ) {
            (Some("json_repair"), Some(Value::Bool(true)), _) => Some(expected),
            (_, _, Some("throws")) => None,
            _ => match &expected {
                Value::String(t) => serde_json::from_str::<Value>(t).ok(),
                other if logging => Some(other.clone()),
                _ => None,
            },
        };
        let input_is_json = serde_json::from_str::<Value>(input).is_ok();
        let schema_guided = row["options"].get("schema").is_some();
        match (parse_json(input, None), peer) {
            (Err(_), _) => rejected += 1,
            (Ok(ours), Some(p)) if ours == p => exact += 1,
            // Justified: the input is valid JSON and the peer coerces it to its `schema` option.
            (Ok(_), Some(_)) if schema_guided && input_is_json => {
                justified.push(format!("line {}: schema coercion by the peer", n + 1))
            }
            (Ok(ours), Some(p)) => different.push(format!(
                "line {}: {input:?}\n    ours {ours}\n    peer {p}",
                n + 1
            )),
            // Justified: the input is a valid JSON document the peer refuses or empties.
            (Ok(_), None) if input_is_json => justified.push(format!(
                "line {}: valid JSON the peer refuses or returns empty",
                n + 1
            )),
            // Justified: prose before one JSON value is plangate's extraction rule (the peer throws on it).
            (Ok(_), None) if PROSE_BEFORE_VALUE.contains(&input) => {
                justified.push(format!("line {}: prose before one value", n + 1))
            }
            (Ok(ours), None) => {
                no_peer_value += 1;
                different.push(format!(
                    "line {}: {input:?}\n    ours {ours}\n    peer: no value (throws or unparseable text)",
                    n + 1
                ));
            }
        }
    }
    eprintln!(
        "json-repair conformance: {total} cases: exact {exact}, rejected {rejected}, different {} (unjustified {}, accepted without a peer value {no_peer_value}; justified {}: {})",
        different.len() + justified.len(),
        different.len(),
        justified.len(),
        justified.join("; ")
    );
    assert_eq!(total, 642, "the case file changed");
    assert!(
        different.is_empty(),
        "{} cases differ from the peer:\n{}",
        different.len(),
        different.join("\n")
    );
}
