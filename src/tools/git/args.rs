//! The git tool's reading of a step's parameters: the argv that is run
//! ([`argv`]), and what the run needs to know about it (read-only, dry run,
//! stash subcommand and message, push target). The risk rules themselves are
//! in [`crate::policy::git`], shared with the bash classifier; the plan
//! checks are in [`super::problems`].

use crate::policy::git::{self as rules, Parsed, PushTarget, Tag, stash_subs};
use crate::tools::params::git::{GitOperation, GitParams};

pub(crate) use super::problems::{Where, problems};
pub(crate) use rules::Request;

/// The rules' view of typed parameters.
pub(crate) fn request(p: &GitParams) -> Request<'_> {
    Request {
        op: p.operation,
        args: &p.args,
        has_files: !p.files.is_empty(),
        force: p.force,
        dry_run: p.dry_run,
        has_message: p.commit_message.is_some(),
    }
}

/// Classify a git step (the rules of [`crate::policy::git`]).
pub(crate) fn classify(params: &GitParams) -> rules::Verdict {
    rules::classify(&request(params))
}

fn parse(params: &GitParams) -> Parsed {
    rules::parse(params.operation, &params.args)
}

/// Diff options that keep git from running programs or colouring its output.
const PLAIN_DIFF: [&str; 3] = ["--no-ext-diff", "--no-textconv", "--no-color"];

fn owned(items: &[&str]) -> impl Iterator<Item = String> {
    items.iter().map(|s| (*s).to_owned())
}

/// The git command line after `git`: the subcommand, plangate's own flags, then `args`, then `files`.
///
/// `args` are re-ordered as options, positionals, `--`, paths (and `--` is
/// added after a checkout's or reset's target so that git never reads it as a
/// path) — unless they hold an option plangate does not know: then they are
/// passed exactly as written (such a step needs an explicit approval anyway).
/// Abbreviated long options are written in full either way.
pub(crate) fn argv(params: &GitParams) -> Vec<String> {
    use GitOperation as G;
    let p = parse(params);
    let unknown_stash = params.operation == G::Stash
        && p.stash_sub
            .as_deref()
            .is_some_and(|s| !stash_subs().contains(&s));
    if p.unreadable().is_some() || unknown_stash {
        return argv_verbatim(params, &p);
    }
    let mut v = vec![params.operation.as_str().to_owned()];
    match params.operation {
        G::Status => with_files(&mut v, params, &p),
        G::Diff | G::Log => {
            v.extend(owned(&PLAIN_DIFF));
            with_files(&mut v, params, &p);
        }
        G::Add => add(&mut v, params, &p),
        G::Commit => commit(&mut v, params, &p),
        G::Push | G::Pull | G::Branch => remote_or_branch(&mut v, params, &p),
        G::Checkout | G::Reset => target_then_paths(&mut v, params, &p),
        G::Stash => stash(&mut v, params, &p),
    }
    v
}

/// `args` as written (abbreviations in full), then `--` and `files`.
fn with_files(v: &mut Vec<String>, params: &GitParams, p: &Parsed) {
    v.extend(p.canonical(&params.args));
    if !params.files.is_empty() {
        if !p.dashdash {
            v.push("--".to_owned());
        }
        v.extend(params.files.iter().cloned());
    }
}

/// Positionals, paths after `--` and `files`: all paths.
fn all_paths(params: &GitParams, p: &Parsed) -> Vec<String> {
    let mut paths: Vec<String> = p.positionals.clone();
    paths.extend(p.paths.iter().cloned());
    paths.extend(params.files.iter().cloned());
    paths
}

fn push_paths(v: &mut Vec<String>, paths: Vec<String>) {
    if !paths.is_empty() {
        v.push("--".to_owned());
        v.extend(paths);
    }
}

fn add(v: &mut Vec<String>, params: &GitParams, p: &Parsed) {
    if params.dry_run {
        v.push("--dry-run".to_owned());
    }
    if params.force {
        v.push("--force".to_owned());
    }
    v.extend(p.option_tokens().cloned());
    let paths = all_paths(params, p);
    if paths.is_empty() && !p.has(Tag::AddAll) {
        v.push("--all".to_owned());
    }
    push_paths(v, paths);
}

fn commit(v: &mut Vec<String>, params: &GitParams, p: &Parsed) {
    v.push("-m".to_owned());
    v.push(params.commit_message.clone().unwrap_or_default());
    if params.dry_run {
        v.push("--dry-run".to_owned());
    }
    v.extend(p.option_tokens().cloned());
    push_paths(v, all_paths(params, p));
}

fn remote_or_branch(v: &mut Vec<String>, params: &GitParams, p: &Parsed) {
    use GitOperation as G;
    let op = params.operation;
    if op == G::Pull && !p.has(Tag::Integrate) {
        v.push("--ff-only".to_owned());
    }
    if params.force {
        v.push(
            if op == G::Push {
                "--force-with-lease"
            } else {
                "--force"
            }
            .to_owned(),
        );
    }
    if params.dry_run && op != G::Branch {
        v.push("--dry-run".to_owned());
    }
    v.extend(p.option_tokens().cloned());
    v.extend(p.positionals.iter().cloned());
}

fn target_then_paths(v: &mut Vec<String>, params: &GitParams, p: &Parsed) {
    if params.force {
        let reset = params.operation == GitOperation::Reset;
        v.push(if reset { "--hard" } else { "--force" }.to_owned());
    }
    v.extend(p.option_tokens().cloned());
    let mut pos = p.positionals.iter();
    let target = pos.next();
    let mut paths: Vec<String> = pos.cloned().collect();
    paths.extend(p.paths.iter().cloned());
    paths.extend(params.files.iter().cloned());
    if let Some(t) = target {
        v.push(t.clone());
    }
    // `--` after the target makes git read it as a commit, never as a path.
    if target.is_some() || !paths.is_empty() {
        v.push("--".to_owned());
        v.extend(paths);
    }
}

fn stash(v: &mut Vec<String>, params: &GitParams, p: &Parsed) {
    let sub = p.stash_sub.clone().unwrap_or_else(|| "push".to_owned());
    v.push(sub.clone());
    if sub == "show" {
        v.extend(owned(&PLAIN_DIFF));
    }
    if sub == "push"
        && let Some(m) = &params.commit_message
    {
        v.push("-m".to_owned());
        v.push(m.clone());
    }
    v.extend(p.option_tokens().cloned());
    v.extend(p.positionals.iter().cloned());
    let mut paths = p.paths.clone();
    paths.extend(params.files.iter().cloned());
    push_paths(v, paths);
}

/// `args` as written (abbreviations in full), after the subcommand and plangate's flags, then `files`.
fn argv_verbatim(params: &GitParams, p: &Parsed) -> Vec<String> {
    use GitOperation as G;
    let op = params.operation;
    let mut v = vec![op.as_str().to_owned()];
    match op {
        G::Diff | G::Log => v.extend(owned(&PLAIN_DIFF)),
        G::Commit => {
            v.push("-m".to_owned());
            v.push(params.commit_message.clone().unwrap_or_default());
        }
        G::Pull if !p.has(Tag::Integrate) => v.push("--ff-only".to_owned()),
        _ => {}
    }
    if params.force {
        let flag = match op {
            G::Push => Some("--force-with-lease"),
            G::Reset => Some("--hard"),
            G::Pull | G::Add | G::Branch | G::Checkout => Some("--force"),
            _ => None,
        };
        v.extend(flag.map(str::to_owned));
    }
    if params.dry_run && matches!(op, G::Add | G::Commit | G::Push | G::Pull) {
        v.push("--dry-run".to_owned());
    }
    let canonical = p.canonical(&params.args);
    let mut args: &[String] = &canonical;
    if op == G::Stash
        && let Some(m) = &params.commit_message
    {
        // `commit_message` is only accepted for `stash push` (checked at load).
        if p.stash_sub.is_some() {
            args = args.get(1..).unwrap_or(&[]);
        }
        v.extend(["push".to_owned(), "-m".to_owned(), m.clone()]);
    }
    v.extend(args.iter().cloned());
    if !params.files.is_empty() {
        if !p.dashdash {
            v.push("--".to_owned());
        }
        v.extend(params.files.iter().cloned());
    }
    v
}

/// Whether the operation, as asked, only reads (runs with `GIT_OPTIONAL_LOCKS=0`, no before/after comparison).
pub(crate) fn is_read_only(params: &GitParams) -> bool {
    rules::risk::read_only(params.operation, &parse(params))
}

/// Whether the operation, as asked, is a dry run (changes nothing).
pub(crate) fn is_dry_run(params: &GitParams) -> bool {
    params.dry_run || parse(params).has(Tag::DryRun)
}

/// A push's target (for the run-time default-branch check).
pub(crate) fn push_target_of(params: &GitParams) -> PushTarget {
    rules::push_target(&parse(params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn table() -> Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tools/git_rules.json"
        );
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn params(v: &Value) -> GitParams {
        serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
    }

    fn cases<'a>(r: &'a Value, key: &str) -> &'a Vec<Value> {
        r[key].as_array().unwrap_or_else(|| panic!("no {key}"))
    }

    #[test]
    fn classification_table() {
        let r = table();
        let mut failures = Vec::new();
        for c in cases(&r, "classify") {
            let want = c[0].as_str().unwrap_or("");
            let (kind, reason) = want.split_once(": ").unwrap_or((want, ""));
            let v = classify(&params(&c[1]));
            let got = if v.blocked.is_some() {
                "blocked"
            } else if v.unclassifiable.is_some() {
                "unclassifiable"
            } else {
                v.risk.as_str()
            };
            if got != kind || !v.reason.contains(reason) {
                failures.push(format!("{}: got {got} ({}), want {want}", c[1], v.reason));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn argv_table() {
        let r = table();
        let mut failures = Vec::new();
        for c in cases(&r, "argv") {
            let want: Vec<String> = serde_json::from_value(c[1].clone()).unwrap_or_default();
            let got = argv(&params(&c[0]));
            if got != want {
                failures.push(format!("{}: got {got:?}, want {want:?}", c[0]));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn problems_table() {
        let r = table();
        let mut failures = Vec::new();
        for c in cases(&r, "problems") {
            let p = params(&c[0]);
            let found: Vec<String> = problems(&request(&p))
                .into_iter()
                .map(|pb| {
                    let at = match pb.at {
                        Where::Arg(i) => format!("args[{i}]"),
                        Where::Force => "force".to_owned(),
                        Where::DryRun => "dry_run".to_owned(),
                        Where::Files => "files".to_owned(),
                        Where::CommitMessage => "commit_message".to_owned(),
                    };
                    format!("{at}: {}", pb.message)
                })
                .collect();
            let want: Vec<&str> = c[1]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let ok = if want.is_empty() {
                found.is_empty()
            } else {
                found.iter().any(|f| want.iter().all(|w| f.contains(w)))
            };
            if !ok {
                failures.push(format!("{}: found {found:?}, want {want:?}", c[0]));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn push_targets() {
        let t = |a: &[&str]| {
            let args: Vec<String> = a.iter().map(|s| (*s).to_owned()).collect();
            rules::push_target(&rules::parse(GitOperation::Push, &args))
        };
        assert_eq!(t(&["origin", "a", "b:refs/heads/c"]).branches, ["a", "c"]);
        assert_eq!(
            t(&["origin", "x:refs/tags/v1"]).branches,
            Vec::<String>::new()
        );
        assert!(t(&["origin"]).unknown.is_some());
        assert!(t(&["--tags", "origin"]).unknown.is_none());
        assert!(t(&["origin", "+a"]).forced);
        assert!(t(&["origin", ":a"]).deletes);
        assert_eq!(t(&["origin", "a"]).remote.as_deref(), Some("origin"));
        assert!(t(&["origin", "0123456789abcdef"]).unknown.is_some());
    }

    #[test]
    fn bundles_and_values() {
        let args: Vec<String> = ["-uf", "--push-option", "-x", "origin", "br"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let p = rules::parse(GitOperation::Push, &args);
        assert!(p.unknown.is_empty(), "{:?}", p.unknown);
        assert_eq!(
            p.positionals,
            ["origin", "br"],
            "`-x` is the push option's value"
        );
        assert!(p.has(Tag::Force));
        let p = rules::parse(
            GitOperation::Log,
            &["-n5".to_owned(), "-Sneedle".to_owned()],
        );
        assert!(p.unknown.is_empty() && p.positionals.is_empty(), "{p:?}");
    }
}
