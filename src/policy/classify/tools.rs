//! Developer tools judged by subcommand: git (through the git tool's own
//! rules, [`crate::policy::git`]), cargo, npm & co, go, make, network
//! clients, package managers and infrastructure CLIs.

use super::commands::{Cmd, parse_opts};
use super::walk::Walker;
use super::words::Arg;
use crate::policy::Risk;
use crate::policy::git::Word as GitWord;

const NETWORK: &[&str] = &[
    "curl", "wget", "ssh", "nc", "ncat", "netcat", "telnet", "ftp", "sftp", "socat", "aria2c",
    "http", "https", "ping", "dig", "nslookup", "host",
];
const PACKAGE_MANAGERS: &[&str] = &[
    "apt", "apt-get", "yum", "dnf", "apk", "pacman", "zypper", "brew", "pip", "pip3", "pipx",
    "gem", "conda", "poetry", "uv", "bundle", "composer", "snap", "flatpak", "dpkg", "rpm",
];
const INFRA: &[&str] = &[
    "docker",
    "podman",
    "kubectl",
    "helm",
    "terraform",
    "tofu",
    "ansible",
    "aws",
    "gcloud",
    "az",
];
const INFRA_READ_ONLY: &[&str] = &[
    "ps",
    "images",
    "version",
    "info",
    "inspect",
    "logs",
    "get",
    "describe",
    "plan",
    "validate",
    "show",
    "list",
    "ls",
    "top",
    "config",
    "fmt",
    "--version",
    "help",
];

impl Walker {
    pub(crate) fn tool(&mut self, cmd: &Cmd<'_>) -> bool {
        match cmd.name {
            "git" => self.git(cmd),
            "cargo" => self.cargo(cmd),
            "npm" | "pnpm" | "yarn" | "npx" | "bunx" => self.npm(cmd),
            "go" => self.go(cmd),
            "make" | "gmake" | "cmake" | "ninja" | "just" | "gradle" | "mvn" | "ant" | "bazel"
                if only_info_flags(cmd.args) =>
            {
                self.note(
                    Risk::Safe,
                    format!("`{}` only prints its version or help", cmd.shown),
                );
            }
            "make" | "gmake" | "cmake" | "ninja" | "just" | "gradle" | "mvn" | "ant" | "bazel" => {
                self.note(
                    Risk::Moderate,
                    format!("`{}` runs build recipes (arbitrary commands)", cmd.shown),
                );
            }
            n if NETWORK.contains(&n) => self.network(cmd),
            n if PACKAGE_MANAGERS.contains(&n) => self.package_manager(cmd),
            n if INFRA.contains(&n) => self.infra(cmd),
            "rustup" | "rustc" | "gofmt" | "rustfmt" | "prettier" | "eslint" => self.formatter(cmd),
            _ => return false,
        }
        true
    }

    /// `git …`: judged by the same rules as the `git` tool ([`crate::policy::git`]).
    fn git(&mut self, cmd: &Cmd<'_>) {
        let words: Vec<GitWord<'_>> = cmd
            .args
            .iter()
            .map(|a| GitWord {
                text: a.lit(),
                raw: &a.raw,
            })
            .collect();
        let c = crate::policy::git::classify_command(&words);
        let v = c.verdict;
        if let Some(why) = v.unclassifiable {
            self.unclassifiable(format!("`{}`: {why}", cmd.shown));
        }
        self.note(v.risk, format!("`{}`: {}", cmd.shown, v.reason));
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

    fn cargo(&mut self, cmd: &Cmd<'_>) {
        let with = ["--manifest-path", "--config", "-Z", "--color", "-C"];
        let (_, rest) = split_subcommand(cmd.args, &with);
        let rest: Vec<Arg> = rest
            .into_iter()
            .skip_while(|a| a.lit().is_some_and(|t| t.starts_with('+')))
            .collect();
        let sub = rest.first().and_then(Arg::lit).unwrap_or("");
        let opts = parse_opts(rest.get(1..).unwrap_or(&[]), &[]);
        let (risk, why) = match sub {
            "fmt" if rest.iter().any(|a| a.is("--check")) => (Risk::Safe, "only checks formatting"),
            "fmt" => (Risk::Moderate, "rewrites source files"),
            "clippy" | "fix" if opts.flags.iter().any(|f| f == "--fix") || sub == "fix" => {
                (Risk::Moderate, "rewrites source files")
            }
            "check" | "test" | "clippy" | "build" | "b" | "c" | "t" | "doc" | "d" | "tree"
            | "metadata" | "version" | "--version" | "-V" | "help" | "bench" | "locate-project"
            | "verify-project" | "pkgid" | "search" | "read-manifest" | "nextest" | "audit"
            | "deny" | "" => (Risk::Safe, "builds, checks or reads"),
            "install" | "add" | "remove" | "rm" | "update" | "uninstall" => {
                (Risk::Moderate, "installs or changes dependencies")
            }
            "publish" | "yank" | "owner" | "login" | "logout" => {
                (Risk::Moderate, "publishes to or changes the registry")
            }
            "run" | "r" => (Risk::Moderate, "runs a program"),
            _ => (
                Risk::Moderate,
                "runs a cargo subcommand with unknown effects",
            ),
        };
        self.note(risk, format!("`{}` {why}", cmd.shown));
    }

    fn npm(&mut self, cmd: &Cmd<'_>) {
        let sub = cmd
            .args
            .iter()
            .find_map(|a| a.lit().filter(|t| !t.starts_with('-')))
            .unwrap_or("");
        let read_only = [
            "ls", "list", "view", "info", "outdated", "audit", "whoami", "why", "explain", "help",
            "config", "",
        ];
        let (risk, why) = match sub {
            _ if cmd.name == "npx" || cmd.name == "bunx" => {
                (Risk::Moderate, "downloads and runs a package")
            }
            s if read_only.contains(&s) && !cmd.args.iter().any(|a| a.is("fix") || a.is("set")) => {
                (Risk::Safe, "only reads package information")
            }
            "install" | "i" | "ci" | "add" | "update" | "upgrade" | "remove" | "uninstall" => {
                (Risk::Moderate, "installs packages")
            }
            _ => (Risk::Moderate, "runs package scripts (effects unknown)"),
        };
        self.note(risk, format!("`{}` {why}", cmd.shown));
    }

    fn go(&mut self, cmd: &Cmd<'_>) {
        let sub = cmd.args.first().and_then(Arg::lit).unwrap_or("");
        let second = cmd.args.get(1).and_then(Arg::lit).unwrap_or("");
        let (risk, why) = match (sub, second) {
            ("vet" | "test" | "build" | "version" | "list" | "doc" | "help", _) => {
                (Risk::Safe, "builds, checks or reads")
            }
            ("env", _) if !cmd.args.iter().any(|a| a.is("-w") || a.is("-u")) => {
                (Risk::Safe, "only reads")
            }
            ("mod", "verify" | "graph" | "why") => (Risk::Safe, "only reads"),
            ("install" | "get", _) | ("mod", "download") => {
                (Risk::Moderate, "downloads and installs modules")
            }
            ("run" | "generate", _) => (Risk::Moderate, "runs a program"),
            _ => (Risk::Moderate, "changes files or runs code"),
        };
        self.note(risk, format!("`{}` {why}", cmd.shown));
    }

    fn network(&mut self, cmd: &Cmd<'_>) {
        let with = [
            "-o",
            "--output",
            "-O",
            "--output-document",
            "-P",
            "--directory-prefix",
        ];
        let what = format!("`{}`", cmd.shown);
        let opts = parse_opts(cmd.args, &with);
        let output = match cmd.name {
            "curl" => opts.value_of(&["-o", "--output"]),
            "wget" => opts.value_of(&["-O", "--output-document", "-P", "--directory-prefix"]),
            _ => None,
        };
        if let Some(out) = output.filter(|o| !o.is("-")) {
            self.write_to(&out, &what);
        }
        self.note(Risk::Moderate, format!("{what} uses the network"));
    }

    fn package_manager(&mut self, cmd: &Cmd<'_>) {
        let sub = cmd
            .args
            .iter()
            .find_map(|a| a.lit().filter(|t| !t.starts_with('-')))
            .unwrap_or("");
        let read_only = [
            "list",
            "search",
            "show",
            "info",
            "freeze",
            "check",
            "policy",
            "--version",
            "-l",
            "-L",
            "-s",
        ];
        let first_flag = cmd.args.first().and_then(Arg::lit).unwrap_or("");
        let (risk, why) = if read_only.contains(&sub)
            || (cmd.name == "dpkg" && read_only.contains(&first_flag))
        {
            (Risk::Safe, "only reads package information")
        } else {
            (Risk::Moderate, "installs or changes packages")
        };
        self.note(risk, format!("`{}` {why}", cmd.shown));
    }

    fn infra(&mut self, cmd: &Cmd<'_>) {
        let words: Vec<&str> = cmd
            .args
            .iter()
            .filter_map(Arg::lit)
            .filter(|t| !t.starts_with('-'))
            .collect();
        let read_only = words.first().is_some_and(|w| INFRA_READ_ONLY.contains(w))
            && words.len() <= 3
            && !words
                .iter()
                .any(|w| matches!(*w, "rm" | "delete" | "apply" | "destroy" | "exec" | "run"));
        if read_only {
            self.note(Risk::Safe, format!("`{}` only reads", cmd.shown));
        } else {
            self.note(
                Risk::Moderate,
                format!("`{}` changes infrastructure or containers", cmd.shown),
            );
        }
    }

    fn formatter(&mut self, cmd: &Cmd<'_>) {
        let checks = cmd.args.iter().any(|a| {
            a.is("--check") || a.is("-l") || a.is("-d") || a.is("--version") || a.is("-V")
        });
        if checks || cmd.name == "rustc" && cmd.args.iter().any(|a| a.is("--version") || a.is("-V"))
        {
            self.note(Risk::Safe, format!("`{}` only checks or reads", cmd.shown));
        } else {
            self.note(Risk::Moderate, format!("`{}` may write files", cmd.shown));
        }
    }
}

/// Splits `tool [global options] subcommand args...` after the global options.
fn split_subcommand(args: &[Arg], with_value: &[&str]) -> (super::commands::Opts, Vec<Arg>) {
    let mut i = 0;
    while let Some(t) = args.get(i).and_then(Arg::lit) {
        if !t.starts_with('-') || t == "-" {
            break;
        }
        let takes = with_value.contains(&t);
        i += if takes { 2 } else { 1 };
    }
    let i = i.min(args.len());
    let globals = parse_opts(args.get(..i).unwrap_or(&[]), with_value);
    (globals, args.get(i..).unwrap_or(&[]).to_vec())
}

/// Whether the arguments are nothing but flags that print a version, help or paths.
fn only_info_flags(args: &[Arg]) -> bool {
    const INFO: &[&str] = &[
        "--version",
        "-V",
        "-v",
        "--help",
        "-h",
        "--exec-path",
        "--html-path",
        "--man-path",
        "--info-path",
    ];
    !args.is_empty()
        && args
            .iter()
            .all(|a| a.lit().is_some_and(|t| INFO.contains(&t)))
}
