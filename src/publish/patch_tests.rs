//! The patch policy against data fixtures (`tests/fixtures/patch/cases.json`).

use super::*;

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    #[serde(default)]
    policies: Vec<PatchPolicy>,
    files: Vec<PatchFile>,
    expect: Option<PatchAction>,
}

#[test]
fn patch_policy_fixtures() {
    let cases: Vec<Case> =
        serde_json::from_str(include_str!("../../tests/fixtures/patch/cases.json"))
            .unwrap_or_else(|e| panic!("cases.json: {e}"));
    assert!(cases.len() > 30);
    for c in cases {
        let v = evaluate(&c.files, &c.policies);
        assert_eq!(verdict(&v), c.expect, "{}: {v:?}", c.name);
    }
}

#[test]
fn normalisation_resolves_and_refuses() {
    assert_eq!(normalise("./a//b/../c").as_deref(), Ok("a/c"));
    assert_eq!(normalise(".github./x").as_deref(), Ok(".github/x"));
    assert!(normalise("..").is_err());
    assert!(normalise("").is_err());
    assert!(normalise("a/\u{feff}b").is_err());
    assert!(normalise("a\nb").is_err());
}
