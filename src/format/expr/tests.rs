//! The expression language, table-driven from `tests/fixtures/expr/cases.tsv`.

use super::*;

struct Fixed;

impl Lookup for Fixed {
    fn value(&self, r: &Ref) -> Val {
        match r.to_string().as_str() {
            "inputs.base" => Val::Str("main".into()),
            "inputs.n" => Val::Num(3.0),
            "inputs.flag" => Val::Bool(true),
            "matrix.os" => Val::Str("linux".into()),
            "steps.build.outputs.version" => Val::Str("1.2".into()),
            "steps.build.status" | "steps.build.outcome" => Val::Str("success".into()),
            "steps.lint.status" => Val::Str("failed".into()),
            "steps.lint.outcome" => Val::Str("failure".into()),
            _ => Val::Null,
        }
    }
    fn success(&self) -> bool {
        false
    }
    fn failure(&self) -> bool {
        true
    }
}

fn static_type(r: &Ref) -> Ty {
    match r {
        Ref::Input(n) if n == "n" => Ty::Num,
        Ref::Input(n) if n == "flag" => Ty::Bool,
        Ref::Input(_) | Ref::Matrix(_) | Ref::Output(..) | Ref::Status(_) | Ref::Outcome(_) => {
            Ty::Str
        }
    }
}

fn shown(v: &Val) -> String {
    match v {
        Val::Null => "null".into(),
        Val::Bool(b) => b.to_string(),
        Val::Num(n) => n.to_string(),
        Val::Str(s) => format!("'{s}'"),
    }
}

/// Each line: `EXPRESSION <TAB> EXPECTED`, where EXPECTED is the value, or
/// `parse@OFFSET: words` (a syntax error), `type@OFFSET: words` (a load-time
/// type error) or `run@OFFSET: words` (an evaluation error).
#[test]
fn cases_from_the_fixture_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/expr/cases.tsv");
    let table = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut n = 0;
    for (i, line) in table.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        n += 1;
        let (expr, want) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("line {}: no tab", i + 1));
        let got = match parse(expr) {
            Err(e) => format!("parse@{}: {}", e.at, e.message),
            Ok(e) => match check(&e, &static_type, false).first() {
                Some(t) => format!("type@{}: {}", t.at, t.message),
                None => match eval(&e, &Fixed) {
                    Ok(v) => shown(&v),
                    Err(r) => format!("run@{}: {}", r.at, r.message),
                },
            },
        };
        let ok = match want.split_once(": ") {
            Some((kind, words)) if kind.contains('@') => {
                got.starts_with(&format!("{kind}: ")) && got.contains(words)
            }
            _ => got == want,
        };
        assert!(ok, "line {}: `{expr}`\n want {want}\n got  {got}", i + 1);
    }
    assert!(n >= 40, "only {n} cases");
}

#[test]
fn status_functions_and_references_are_found() {
    let e = parse("always() && steps.a.outputs.x == inputs.y").unwrap_or_else(|e| panic!("{e:?}"));
    assert!(e.uses_status());
    let refs: Vec<String> = e.refs().iter().map(|(r, _)| r.to_string()).collect();
    assert_eq!(refs, ["steps.a.outputs.x", "inputs.y"]);
    let e = parse("contains(matrix.os, 'lin')").unwrap_or_else(|e| panic!("{e:?}"));
    assert!(!e.uses_status());
    assert_eq!(unwrap_condition("${{ a }}"), (" a ", 3));
    assert_eq!(unwrap_condition("  x == 1 "), ("x == 1", 2));
}

#[test]
fn a_condition_must_be_boolean() {
    let e = parse("inputs.base").unwrap_or_else(|e| panic!("{e:?}"));
    let errs = check(&e, &static_type, true);
    assert!(errs[0].message.contains("must be a boolean"), "{errs:?}");
}
