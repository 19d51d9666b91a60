use super::*;

#[test]
fn static_values() {
    assert_eq!(eval_word("r''m", None).arg.text.as_deref(), Some("rm"));
    assert_eq!(eval_word("\\rm", None).arg.text.as_deref(), Some("rm"));
    assert_eq!(eval_word("$'\\x72m'", None).arg.text.as_deref(), Some("rm"));
    let h = eval_word("\"$HOME\"/x", Some("/home/ci"));
    assert_eq!(h.arg.text.as_deref(), Some("/home/ci/x"));
    assert!(eval_word("$X", None).arg.text.is_none());
    assert_eq!(eval_word("$(ls)", None).scripts, vec!["ls".to_string()]);
    assert_eq!(eval_word("a*", None).arg.glob_at, Some(1));
    assert_eq!(eval_word("'a*'", None).arg.glob_at, None);
}

#[test]
fn expansions_evaluated_again() {
    assert!(subscript_expands("a[$(id)]") && subscript_expands("a[b[$x]"));
    assert!(subscript_expands("a[$x") && subscript_expands("a[`id`]=1"));
    assert!(!subscript_expands("a[1]$x") && !subscript_expands("$x[1]"));
    assert!(evaluated_again("$(id)") && !evaluated_again("x + 1"));
    assert!(expansion_problem("${!x}").is_some() && expansion_problem("${!x[@]}").is_none());
    assert!(expansion_problem("${!pre*}").is_none() && expansion_problem("${x@P}").is_some());
}

#[test]
fn ansi_c_escapes() {
    let d = |s: &str| decode_ansi_c(s);
    assert_eq!(d(r"\101\x42\x4"), Some("AB\x04".to_string()));
    assert_eq!(d(r"\0\1010\x414"), Some("\0A0A4".to_string()));
    assert_eq!(d(r"a\tb\\\'"), Some("a\tb\\'".to_string()));
    assert_eq!(d(r"\x"), None);
    assert_eq!(d(r"\u41"), None);
    assert_eq!(d(r"\cA"), None);
}

#[test]
fn scratch_variables_named_other_than_expanded() {
    for named in [
        "TMPDIR=x",
        "unset TMPDIR",
        "${TMPDIR:=x}",
        "read PLANGATE_STEP_ARTIFACTS",
        "\\$TMPDIR",
    ] {
        assert!(mentions_scratch_var(named), "{named}");
    }
    for plain in [
        "$TMPDIR/x",
        "${TMPDIR}",
        "MYTMPDIR=x",
        "TMPDIR_X=1",
        "echo tmpdir",
    ] {
        assert!(!mentions_scratch_var(plain), "{plain}");
    }
}
