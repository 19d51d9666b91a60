//! Developer tools judged by subcommand: git (through the git tool's own
//! rules, [`crate::git`]), cargo, npm & co, go, make, network
//! clients, package managers and infrastructure CLIs.

use super::commands::Cmd;
use super::rules;
use super::walk::Walker;
use super::words::Arg;
use super::wrappers::leading;
use crate::git::Word as GitWord;
use crate::model::Risk;

impl Walker {
    pub(super) fn tool(&mut self, cmd: &Cmd<'_>) -> bool {
        match cmd.name {
            "git" => self.git(cmd),
            n if rules::raw().subcommands(n).is_some() => self.by_subcommand(cmd),
            n if rules::raw().list("network-clients", "names").has(n) => self.network_client(cmd),
            n if rules::raw().list("formatters", "names").has(n) => self.formatter(cmd),
            _ => return false,
        }
        true
    }

    /// `git …`: judged by the same rules as the `git` tool ([`crate::git`]).
    fn git(&mut self, cmd: &Cmd<'_>) {
        let words: Vec<GitWord<'_>> = cmd
            .args
            .iter()
            .map(|a| GitWord {
                text: a.lit(),
                raw: &a.raw,
            })
            .collect();
        let c = crate::git::classify_command(&words);
        let v = c.verdict;
        let sub = cmd
            .args
            .iter()
            .filter_map(Arg::lit)
            .find(|t| !t.starts_with('-'));
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
        if v.risk > Risk::Safe {
            let what = format!("`{}`", cmd.shown);
            for i in c.repo_words {
                if let Some(a) = cmd.args.get(i) {
                    self.write_to(a, &what);
                }
            }
            for dir in c.repo_attached {
                self.write_to(&Arg::literal(&dir), &what);
            }
        }
    }

    /// cargo, npm & co, go, package managers: the group of their
    /// `[[subcommands]]` entry holding the subcommand decides.
    fn by_subcommand(&mut self, cmd: &Cmd<'_>) {
        let Some(table) = rules::raw().subcommands(cmd.name) else {
            return;
        };
        let lits: Vec<Option<&str>> = cmd.args.iter().map(Arg::lit).collect();
        let (words, after): (Vec<&str>, &[Option<&str>]) = match table.at {
            rules::SubAt::FirstWord => (
                lits.iter()
                    .take(1)
                    .copied()
                    .map(Option::unwrap_or_default)
                    .collect(),
                &lits,
            ),
            rules::SubAt::FirstTwo => (
                lits.iter()
                    .take(2)
                    .copied()
                    .map(Option::unwrap_or_default)
                    .collect(),
                &lits,
            ),
            // After the global options (and a `+toolchain`).
            rules::SubAt::AfterGlobals => {
                let with = table.with_value.strs();
                let globals = cmd.args.len() - leading(cmd.args, &with).1.len();
                let rest = lits.get(globals..).unwrap_or(&[]);
                (
                    rest.iter()
                        .take(1)
                        .copied()
                        .map(Option::unwrap_or_default)
                        .collect(),
                    rest,
                )
            }
            rules::SubAt::FirstNonOption => {
                let first = lits.iter().flatten().copied().find(|t| !t.starts_with('-'));
                (first.into_iter().collect(), &lits)
            }
        };
        let sub = words.first().copied().unwrap_or("");
        let second = words.get(1).copied().unwrap_or("");
        if table.runs.has(sub) {
            return self.package_runner(cmd, sub, table);
        }
        let (risk, why) = table.judge(sub, second, after);
        if risk > Risk::Safe && table.reaches_network(sub, second) {
            self.network(format!("`{}` reaches the package registry", cmd.shown));
        }
        self.note(risk, format!("`{}` {why}", cmd.shown));
    }

    /// Network clients: the network always; some also by their `[[options]]` entry.
    fn network_client(&mut self, cmd: &Cmd<'_>) {
        let what = format!("`{}`", cmd.shown);
        match cmd.name {
            "nc" | "ncat" | "netcat" | "socat" => {
                let w = |key| rules::raw().list("words", key);
                let runs = cmd.args.iter().any(|a| {
                    a.lit().is_none_or(|t| {
                        w("netcat-exec").has(t)
                            || w("netcat-exec-prefixes").prefixes(&t.to_ascii_uppercase())
                    })
                });
                if runs {
                    self.cannot(cmd, "connects a program to the network");
                }
            }
            n => {
                if let Some(p) = rules::raw().program(n) {
                    self.program(p, cmd);
                }
            }
        }
        self.network(format!("{what} uses the network"));
    }

    /// `bundle exec CMD`, `poetry run CMD`, `uv run CMD`: the command runs in the project's environment.
    fn package_runner(&mut self, cmd: &Cmd<'_>, sub: &str, table: &rules::Subcommands) {
        self.say(
            Risk::Moderate,
            cmd,
            "runs a command in the project's environment",
        );
        let after = cmd
            .args
            .iter()
            .position(|a| a.is(sub))
            .map_or(&[][..], |p| cmd.args.get(p + 1..).unwrap_or(&[]));
        let (_, inner) = leading(after, &table.runs_with_value.strs());
        if !inner.is_empty() {
            self.run(&inner, cmd.input);
        }
    }

    fn formatter(&mut self, cmd: &Cmd<'_>) {
        let checks = rules::raw().list("formatters", "checks");
        if cmd
            .args
            .iter()
            .any(|a| a.lit().is_some_and(|t| checks.has(t)))
        {
            self.say(Risk::Safe, cmd, "only checks or reads");
        } else {
            self.say(Risk::Moderate, cmd, "may write files");
        }
    }
}
