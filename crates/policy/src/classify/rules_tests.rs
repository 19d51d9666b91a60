use super::*;

#[test]
fn the_tables_load_and_every_example_holds() {
    if let Err(e) = checked() {
        panic!("{e}");
    }
    assert!(raw().list("network-clients", "names").has("curl"));
    assert!(raw().judged("ls").is_some());
    assert!(raw().wrapper("sudo").is_some_and(|w| w.as_root));
}

#[test]
fn a_bad_file_is_an_error_naming_the_entry() {
    let cut = TEXT.replacen("\"safe: ls\"", "\"moderate: ls\"", 1);
    assert_ne!(cut, TEXT);
    let e = check_examples(&parse(&cut).expect("parses")).expect_err("wrong label");
    assert!(
        e.starts_with(FILE) && e.contains("options `ls`") && e.contains("safe"),
        "{e}"
    );
    let cut = TEXT.replacen("\"safe: ls\"", "\"safe: curl\"", 1);
    let e = check_examples(&parse(&cut).expect("parses")).expect_err("wrong entry");
    assert!(e.contains("`curl` is not one"), "{e}");
    let cut = TEXT.replacen(
        "[[wrappers]]\nnames = [\"sudo\", \"doas\"]",
        "[[wrappers]]\nnames = [\"sudo\", \"doas\"]\nwith_values = []",
        1,
    );
    assert_ne!(cut, TEXT);
    let e = parse(&cut).expect_err("unknown key");
    assert!(e.starts_with(FILE) && e.contains("with_values"), "{e}");
    let cut = TEXT.replacen(
        "as_root = true",
        "as_root = true\nrisk = \"moderate\"\nwhy = \"x\"",
        1,
    );
    let e = parse(&cut).expect_err("two risks");
    assert!(e.contains("wrapper `sudo`"), "{e}");
}

#[test]
fn a_bad_effect_row_is_an_error() {
    for (from, to, want) in [
        (
            "at = [\"dev-sink\"]",
            "at = [\"dev-sinks\"]",
            "unknown variant `dev-sinks`",
        ),
        (
            "when = [\"top-level\"]",
            "when = [\"top\"]",
            "unknown variant `top`",
        ),
        (
            "act = \"chmod\"",
            "act = \"chown\"",
            "no `[[effects]]` table for `chmod`",
        ),
    ] {
        let cut = TEXT.replacen(from, to, 1);
        assert_ne!(cut, TEXT, "{from}");
        let e = parse(&cut).expect_err(want);
        assert!(e.starts_with(FILE) && e.contains(want), "{e}");
    }
    let effects = &raw().effects;
    assert_eq!(effects.len(), acts().count());
}

#[test]
fn a_bad_table_or_program_row_is_an_error() {
    for (from, to, want) in [
        (
            "\nread_verbs = [",
            "\nread_verb = [",
            "cloud: unknown list `read_verb`",
        ),
        ("[containers]", "[container]", "unknown section `container`"),
        (
            "host_flags = [",
            "host_flag = [",
            "containers: unknown list `host_flag`",
        ),
        (
            "other = \"runs a cargo subcommand with unknown effects\"",
            "",
            "subcommands `cargo`: no `other`",
        ),
        (
            "operands = \"shred\"",
            "operands = \"shreds\"",
            "unknown operands `shreds`",
        ),
        (
            "names = [\"rmdir\", \"unlink\"]",
            "names = [\"rmdir\", \"rm\"]",
            "`rm` has an earlier entry",
        ),
        (
            "why = \"destroys file contents\"",
            "",
            "`risk` and `why` go together",
        ),
        (
            "as_root = true",
            "as_root = true\noperands = \"write\"",
            "wrapper `sudo`: a key of another kind",
        ),
        (
            "names = [\"nsenter\"]",
            "names = [\"nsenter\"]\nas_root = true",
            "wrapper `nsenter`: `as_root` already",
        ),
        (
            "names = [\"yq\"]",
            "names = [\"yq\"]\nscript = [\"-c\"]",
            "options `yq`: a key of another kind",
        ),
        (
            "names = [\"nsenter\"]",
            "names = [\"nsenter\"]\nscripts = [\"-f\"]",
            "wrapper `nsenter`: a key of another kind",
        ),
    ] {
        let cut = TEXT.replacen(from, to, 1);
        assert_ne!(cut, TEXT, "{from}");
        let e = parse(&cut).expect_err(want);
        assert!(e.starts_with(FILE) && e.contains(want), "{e}");
    }
}

#[test]
fn every_known_list_is_loaded() {
    for (section, keys) in tables() {
        for key in keys {
            assert!(
                !raw().list(section, key).0.is_empty(),
                "{section}.{key} is empty"
            );
        }
    }
}
