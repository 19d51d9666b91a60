//! Developer tools judged by subcommand: git (through the git tool's own
//! rules, [`crate::git`]), cargo, npm & co, go, make, network
//! clients, package managers and infrastructure CLIs.

use super::commands::Cmd;
use super::rules;
use super::walk::Walker;
use super::words::Arg;
use crate::git::Word as GitWord;
use crate::model::Risk;

impl Walker {
    pub(super) fn tool(&mut self, cmd: &Cmd<'_>) -> bool {
        match cmd.name {
            "git" => self.git(cmd),
            "cargo" | "npm" | "pnpm" | "yarn" | "npx" | "bunx" | "go" => self.by_subcommand(cmd),
            n if rules::raw().list("network-clients", "names").has(n) => self.network_client(cmd),
            n if rules::raw().list("package-managers", "names").has(n) => self.package_manager(cmd),
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
        let remote = cmd
            .args
            .iter()
            .filter_map(Arg::lit)
            .find(|t| !t.starts_with('-'))
            .is_some_and(|sub| rules::raw().list("words", "git-remote").has(sub));
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
        let sub = cmd
            .args
            .iter()
            .filter_map(Arg::lit)
            .find(|t| !t.starts_with('-'));
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

    /// The subcommand table of `cmd`; unclassifiable (fail-close) without one.
    fn sub_table(&mut self, cmd: &Cmd<'_>) -> Option<&'static rules::Subcommands> {
        let t = rules::raw().subcommands(cmd.name);
        if t.is_none() {
            self.unclassifiable(format!(
                "{}: no `[[subcommands]]` entry for `{}`",
                rules::FILE,
                cmd.name
            ));
        }
        t
    }

    /// cargo, npm & co, go: the group of their `[[subcommands]]` entry
    /// holding the subcommand decides.
    fn by_subcommand(&mut self, cmd: &Cmd<'_>) {
        let Some(table) = self.sub_table(cmd) else {
            return;
        };
        let lits: Vec<Option<&str>> = cmd.args.iter().map(Arg::lit).collect();
        let (words, after): (Vec<&str>, &[Option<&str>]) = match cmd.name {
            // After the global options and a `+toolchain`.
            "cargo" => {
                let globals = global_options(cmd.args, &table.with_value.strs());
                let rest = lits.get(globals..).unwrap_or(&[]);
                let toolchain = rest
                    .iter()
                    .take_while(|t| t.is_some_and(|t| t.starts_with('+')));
                let rest = rest.get(toolchain.count()..).unwrap_or(&[]);
                (rest.iter().map(|t| t.unwrap_or("")).take(1).collect(), rest)
            }
            "go" => (
                lits.iter().take(2).map(|t| t.unwrap_or("")).collect(),
                &lits,
            ),
            // The first word that is no option.
            _ => {
                let first = lits.iter().flatten().copied().find(|t| !t.starts_with('-'));
                (first.into_iter().collect(), &lits)
            }
        };
        let sub = words.first().copied().unwrap_or("");
        let second = words.get(1).copied().unwrap_or("");
        if table.reaches_network(sub, second) {
            self.network(format!("`{}` reaches the package registry", cmd.shown));
        }
        let (risk, why) = if cmd.args.is_empty() && matches!(cmd.name, "yarn" | "pnpm") {
            self.network(format!("`{}` installs packages", cmd.shown));
            (Risk::Moderate, "installs packages")
        } else {
            table.judge(sub, second, after)
        };
        self.note(risk, format!("`{}` {why}", cmd.shown));
    }

    /// Network clients: the network always; some also by their `[[options]]` entry.
    fn network_client(&mut self, cmd: &Cmd<'_>) {
        let what = format!("`{}`", cmd.shown);
        match cmd.name {
            "ssh" => self.ssh(cmd),
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
                if let Some(p) = rules::raw().judged(n) {
                    self.program(p, cmd);
                }
            }
        }
        self.network(format!("{what} uses the network"));
    }

    fn ssh(&mut self, cmd: &Cmd<'_>) {
        let opts = self.options(cmd, cmd.args);
        for o in opts
            .values
            .iter()
            .filter(|(n, _)| n == "-o")
            .map(|(_, v)| v)
        {
            self.ssh_option(o, &cmd.shown);
        }
    }

    fn package_manager(&mut self, cmd: &Cmd<'_>) {
        let t = |key| rules::raw().list("package-managers", key);
        let sub = cmd
            .args
            .iter()
            .find_map(|a| a.lit().filter(|t| !t.starts_with('-')))
            .unwrap_or("");
        let first_flag = cmd.args.first().and_then(Arg::lit).unwrap_or("");
        if t("runs").has(sub) && cmd.name != "npm" {
            return self.package_runner(cmd, sub);
        }
        let local = t("local").has(cmd.name);
        if t("reads").has(sub) || (local && t("reads").has(first_flag)) {
            self.say(Risk::Safe, cmd, "only reads package information");
            return;
        }
        if !local {
            self.network(format!("`{}` downloads packages", cmd.shown));
        }
        self.say(Risk::Moderate, cmd, "installs or changes packages");
    }

    /// `bundle exec CMD`, `poetry run CMD`, `uv run CMD`: the command runs in the project's environment.
    fn package_runner(&mut self, cmd: &Cmd<'_>, sub: &str) {
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
        let with = rules::raw().list("package-managers", "with_value").strs();
        let inner = super::wrappers::leading_options(after, &with);
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

/// How many words of `tool [global options] subcommand args...` are global options.
fn global_options(args: &[Arg], with_value: &[&str]) -> usize {
    let mut i = 0;
    while let Some(t) = args.get(i).and_then(Arg::lit) {
        if !t.starts_with('-') || t == "-" {
            break;
        }
        i += if with_value.contains(&t) { 2 } else { 1 };
    }
    i.min(args.len())
}
