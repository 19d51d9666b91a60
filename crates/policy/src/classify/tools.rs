//! Developer tools judged by subcommand: git (through the git tool's own
//! rules, [`crate::git`]), cargo, npm & co, go, make, network
//! clients, package managers and infrastructure CLIs.

use super::commands::{Cmd, leading};
use super::rules;
use super::walk::Walker;
use super::words::Arg;
use crate::git::Word as GitWord;
use crate::model::Risk;

impl Walker {
    /// `git …`: judged by the same rules as the `git` tool ([`crate::git`]).
    pub(super) fn git<'a>(&mut self, cmd: &Cmd<'a>) {
        let word = |a: &'a Arg| GitWord {
            text: a.lit(),
            raw: &a.raw,
        };
        let words: Vec<GitWord<'_>> = cmd.args.iter().map(word).collect();
        let c = crate::git::classify_command(&words);
        let v = c.verdict;
        let mut lits = cmd.args.iter().filter_map(Arg::lit);
        let sub = lits.find(|t| !t.starts_with('-'));
        let remote = sub.is_some_and(|sub| rules::raw().list("words", "git-remote").has(sub));
        if remote && v.risk > Risk::Safe {
            self.network(format!("`{}` reaches a git remote", cmd.shown));
        }
        if let Some(why) = v.unclassifiable {
            self.unclassifiable(format!("`{}`: {why}", cmd.shown));
        }
        self.note(v.risk, format!("`{}`: {}", cmd.shown, v.reason));
        // Below dangerous the sandbox keeps `.git` read-only (and undoes what
        // gets through): a git command that writes the repository needs an
        // approval at dangerous in a bash step (the git tool is the way below).
        // `clone` and `init` make a new repository instead.
        if v.risk > Risk::Safe && !matches!(sub, Some("clone" | "init")) {
            self.say(Risk::Dangerous, cmd, "changes the repository's `.git`, which only the git tool or a step approved as dangerous may change");
        }
        let what = format!("`{}`", cmd.shown);
        let arg = |i: &usize| cmd.args.get(*i).cloned();
        let words = c.repo_words.iter().filter_map(arg);
        let dirs = c.repo_attached.iter().map(|d| Arg::literal(d));
        for a in words.chain(dirs).filter(|_| v.risk > Risk::Safe) {
            self.write_to(&a, &what);
        }
    }

    /// cargo, npm & co, go, package managers: the group of their
    /// `[[subcommands]]` entry holding the subcommand decides.
    pub(super) fn by_subcommand(&mut self, cmd: &Cmd<'_>) {
        let Some(table) = rules::raw().subcommands(cmd.name) else {
            return;
        };
        let lits: Vec<Option<&str>> = cmd.args.iter().map(Arg::lit).collect();
        let (sub, second, after) = match table.at {
            rules::SubAt::FirstWord => (word(&lits, 0), "", &lits[..]),
            rules::SubAt::FirstTwo => (word(&lits, 0), word(&lits, 1), &lits[..]),
            // After the global options (and a `+toolchain`).
            rules::SubAt::AfterGlobals => {
                let rest = leading(cmd.args, &table.with_value.strs()).pos.len();
                let rest = &lits[lits.len() - rest..];
                (word(rest, 0), "", rest)
            }
            rules::SubAt::FirstNonOption => {
                let first = lits.iter().flatten().find(|t| !t.starts_with('-'));
                (first.copied().unwrap_or(""), "", &lits[..])
            }
        };
        if table.runs.has(sub) {
            return self.package_runner(cmd, sub, table);
        }
        let (risk, why) = table.judge(sub, second, after);
        let n = &table.network;
        let network = n.has("*") || n.has(sub) || n.has(&format!("{sub} {second}"));
        if risk > Risk::Safe && network {
            self.network(format!("`{}` reaches the package registry", cmd.shown));
        }
        self.note(risk, format!("`{}` {why}", cmd.shown));
    }

    /// Network clients: the network always; some also by their `[[options]]` entry.
    pub(super) fn network_client(&mut self, cmd: &Cmd<'_>) {
        let w = |key| rules::raw().list("words", key);
        let upper = |t: &str| t.to_ascii_uppercase();
        let exec =
            |t: &str| w("netcat-exec").has(t) || w("netcat-exec-prefixes").prefixes(&upper(t));
        let netcat = matches!(cmd.name, "nc" | "ncat" | "netcat" | "socat");
        if netcat && cmd.args.iter().any(|a| a.lit().is_none_or(exec)) {
            self.cannot(cmd, "connects a program to the network");
        }
        // The clients with an `[[options]]` row (curl, wget, ssh; not netcat's).
        if let Some(p) = rules::raw().program(cmd.name).filter(|_| !netcat) {
            self.program(p, cmd);
        }
        self.network(format!("`{}` uses the network", cmd.shown));
    }

    /// `bundle exec CMD`, `poetry run CMD`, `uv run CMD`: the command runs in the project's environment.
    fn package_runner(&mut self, cmd: &Cmd<'_>, sub: &str, table: &rules::Subcommands) {
        let why = "runs a command in the project's environment";
        self.say(Risk::Moderate, cmd, why);
        let at = cmd.args.iter().position(|a| a.is(sub));
        let after = at.and_then(|p| cmd.args.get(p + 1..)).unwrap_or(&[]);
        let inner = leading(after, &table.runs_with_value.strs()).pos;
        self.run(&inner, cmd.input);
    }
}

/// The `i`-th word of `w`, or "".
fn word<'a>(w: &[Option<&'a str>], i: usize) -> &'a str {
    w.get(i).copied().flatten().unwrap_or("")
}
