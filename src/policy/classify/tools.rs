//! Developer tools judged by subcommand: git, cargo, npm & co, go, make,
//! network clients, package managers and infrastructure CLIs.

use super::commands::{Cmd, parse_opts};
use super::walk::Walker;
use super::words::Arg;
use crate::policy::Risk;

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

    fn git(&mut self, cmd: &Cmd<'_>) {
        let with = ["-C", "-c", "--git-dir", "--work-tree", "--namespace"];
        let (globals, rest) = split_subcommand(cmd.args, &with);
        if globals.values.iter().any(|(n, _)| n == "-c") {
            self.note(
                Risk::Moderate,
                format!("`{}` overrides git configuration", cmd.shown),
            );
        }
        if rest.is_empty() && only_info_flags(cmd.args) {
            self.note(
                Risk::Safe,
                format!("`{}` only prints git's version, help or paths", cmd.shown),
            );
            return;
        }
        let sub = rest.first().and_then(Arg::lit).unwrap_or("");
        let args = rest.get(1..).unwrap_or(&[]);
        let opts = parse_opts(
            args,
            &["-m", "-u", "--set-upstream-to", "--format", "--sort"],
        );
        let (risk, why) = git_risk(sub, &opts);
        self.note(risk, format!("`{}` {why}", cmd.shown));
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

/// Risk of a git subcommand with its options.
fn git_risk(sub: &str, opts: &super::commands::Opts) -> (Risk, &'static str) {
    const READ_ONLY: &[&str] = &[
        "status",
        "diff",
        "log",
        "show",
        "rev-parse",
        "ls-files",
        "blame",
        "describe",
        "shortlog",
        "rev-list",
        "cat-file",
        "ls-tree",
        "grep",
        "whatchanged",
        "merge-base",
        "name-rev",
        "for-each-ref",
        "show-ref",
        "count-objects",
        "version",
        "help",
        "check-ignore",
        "var",
        "reflog",
        "show-branch",
        "cherry",
        "annotate",
        "difftool",
        "range-diff",
        "--version",
    ];
    const NETWORK: &[&str] = &[
        "fetch",
        "pull",
        "clone",
        "ls-remote",
        "submodule",
        "remote-update",
    ];
    match sub {
        "push" => git_push(opts),
        s if READ_ONLY.contains(&s) => (Risk::Safe, "only reads the repository"),
        "branch" => list_only(
            opts,
            &['a', 'r', 'v', 'l'],
            &[
                "--list",
                "--all",
                "--remotes",
                "--show-current",
                "--contains",
                "--merged",
                "--no-merged",
                "--format",
                "--sort",
                "--color",
                "--no-color",
                "--verbose",
            ],
        ),
        "tag" => list_only(
            opts,
            &['l', 'n'],
            &["--list", "--contains", "--sort", "--format", "--points-at"],
        ),
        "remote"
            if opts.pos.is_empty()
                || opts
                    .pos
                    .first()
                    .is_some_and(|a| a.is("show") || a.is("get-url")) =>
        {
            (Risk::Safe, "only reads the repository")
        }
        "stash" | "worktree"
            if opts
                .pos
                .first()
                .is_some_and(|a| a.is("list") || a.is("show")) =>
        {
            (Risk::Safe, "only reads the repository")
        }
        "config" if opts.has('l', &["--list", "--get", "--get-all", "--get-regexp"]) => {
            (Risk::Safe, "only reads configuration")
        }
        s if NETWORK.contains(&s) => (Risk::Moderate, "fetches over the network"),
        "reset" if opts.flags.iter().any(|f| f == "--hard") => {
            (Risk::Moderate, "discards uncommitted work in the workspace")
        }
        "clean" => (Risk::Moderate, "deletes untracked files in the workspace"),
        _ => (Risk::Moderate, "changes the repository"),
    }
}

fn git_push(opts: &super::commands::Opts) -> (Risk, &'static str) {
    let force = opts.has(
        'f',
        &[
            "--force",
            "--force-with-lease",
            "--force-if-includes",
            "--mirror",
        ],
    ) || opts
        .pos
        .iter()
        .any(|a| a.lit().is_some_and(|t| t.starts_with('+')));
    let delete = opts.has('d', &["--delete", "--prune"])
        || opts
            .pos
            .iter()
            .any(|a| a.lit().is_some_and(|t| t.starts_with(':')));
    if force {
        (Risk::Dangerous, "force-pushes, rewriting remote history")
    } else if delete {
        (Risk::Dangerous, "deletes remote refs")
    } else {
        (Risk::Moderate, "pushes to a remote")
    }
}

/// Safe when only listing flags are given and there is no positional (a name to create).
fn list_only(
    opts: &super::commands::Opts,
    shorts: &[char],
    longs: &[&str],
) -> (Risk, &'static str) {
    let listing_flag = |f: &String| {
        longs
            .iter()
            .any(|l| f == l || f.starts_with(&format!("{l}=")))
            || (!f.starts_with("--") && f.chars().skip(1).all(|c| shorts.contains(&c) || c == 'v'))
    };
    let flags_ok = opts.flags.iter().all(listing_flag);
    let explicit_list = opts.has('l', &["--list"]);
    if flags_ok && (opts.pos.is_empty() || explicit_list) {
        (Risk::Safe, "only lists")
    } else {
        (Risk::Moderate, "changes the repository")
    }
}
