//! Infrastructure CLIs. Rule: a cloud or cluster CLI always reaches the
//! network with the runner's credentials, so its read-only forms (`plan`,
//! `get`, `describe`, `list`, `ls`) are moderate; every other form changes
//! live infrastructure and is dangerous (`terraform apply|destroy|import`,
//! `kubectl apply|delete|drain`, `helm install|uninstall`, `aws ... delete*`,
//! `gcloud ... delete`). A local container engine's read-only forms are safe,
//! building and running containers moderate, removing containers, images,
//! volumes or pruning dangerous, and a container given the host (`--privileged`,
//! `--pid=host`, `--net=host`, a bind mount of a path outside the workspace)
//! dangerous.

use super::commands::Cmd;
use super::paths::Loc;
use super::rules;
use super::walk::Walker;
use super::words::Arg;
use crate::model::Risk;

impl Walker {
    /// Judges infrastructure CLIs; false when `cmd` is none.
    pub(super) fn infra(&mut self, cmd: &Cmd<'_>) -> bool {
        let r = rules::raw();
        if r.list("cloud", "names").has(cmd.name) {
            self.cloud(cmd);
        } else if r.list("containers", "names").has(cmd.name) {
            self.container(cmd);
        } else {
            return false;
        }
        true
    }

    fn cloud(&mut self, cmd: &Cmd<'_>) {
        let mut words: Vec<&str> = Vec::new();
        let mut skip_value = false;
        for t in cmd.args.iter().map(|a| a.lit().unwrap_or("?")) {
            if std::mem::take(&mut skip_value) {
                continue;
            }
            if t.starts_with('-') && t != "--version" && t != "--help" {
                skip_value = cloud("value_flags").has(t);
                continue;
            }
            words.push(t);
        }
        let flags: Vec<&str> = cmd
            .args
            .iter()
            .filter_map(Arg::lit)
            .filter(|t| t.starts_with('-'))
            .collect();
        let what = format!("`{}`", cmd.shown);
        if words.is_empty() || only_info(cloud("info"), cmd.args) {
            self.say(Risk::Safe, cmd, "only prints help or its version");
            return;
        }
        self.network(format!(
            "{what} reaches the network with the runner's credentials"
        ));
        if cloud_reads(cmd.name, &words, &flags) {
            self.say(
                Risk::Moderate,
                cmd,
                "reads infrastructure state (network, credentials)",
            );
        } else {
            self.say(Risk::Dangerous, cmd, "changes live infrastructure");
        }
    }

    fn container(&mut self, cmd: &Cmd<'_>) {
        let words: Vec<&str> = cmd
            .args
            .iter()
            .filter_map(Arg::lit)
            .filter(|t| !t.starts_with('-'))
            .collect();
        let what = format!("`{}`", cmd.shown);
        let sub = words.first().copied().unwrap_or("");
        if words.iter().any(|w| containers("destroys").has(w))
            || cmd.args.iter().any(|a| a.is("-v") || a.is("--volumes")) && words.contains(&"down")
        {
            self.say(
                Risk::Dangerous,
                cmd,
                "removes containers, images or volumes",
            );
            return;
        }
        if words.iter().any(|w| containers("runs").has(w)) {
            self.container_run(cmd, &what);
            return;
        }
        let reads = containers("reads").has(sub)
            || (containers("groups").has(sub)
                && words.get(1).is_some_and(|w| containers("reads").has(w)));
        if reads || only_info(containers("info"), cmd.args) {
            self.say(Risk::Safe, cmd, "only reads");
        } else {
            if containers("registry").has(sub) {
                self.network(format!("{what} reaches a registry"));
            }
            self.say(Risk::Moderate, cmd, "builds or changes local containers");
        }
    }

    /// `docker run`/`create`/`exec`/`compose up`: dangerous when the container gets the host.
    fn container_run(&mut self, cmd: &Cmd<'_>, what: &str) {
        let args = cmd.args;
        for (i, a) in args.iter().enumerate() {
            let Some(t) = a.lit() else { continue };
            let next = args.get(i + 1).and_then(Arg::lit).unwrap_or("");
            let host_flag = containers("host_flags").has(t)
                || (containers("host_options").has(t) && next == "host")
                || containers("host_prefixes").prefixes(t);
            if host_flag {
                self.say(
                    Risk::Dangerous,
                    cmd,
                    "gives the container access to the host",
                );
            }
            let volume = match t {
                "-v" | "--volume" | "--mount" => Some(next),
                _ => t
                    .strip_prefix("--volume=")
                    .or_else(|| t.strip_prefix("--mount="))
                    .or_else(|| t.strip_prefix("-v").filter(|r| !r.is_empty())),
            };
            if let Some(spec) = volume.filter(|v| !v.is_empty()) {
                self.bind_mount(spec, what);
            }
            if matches!(t, "-v" | "--volume" | "--mount")
                && args.get(i + 1).is_some_and(|n| n.lit().is_none())
            {
                self.say(
                    Risk::Dangerous,
                    cmd,
                    "mounts a host path only known at run time",
                );
            }
        }
        self.say(Risk::Moderate, cmd, "runs a container");
    }

    fn bind_mount(&mut self, spec: &str, what: &str) {
        let source = if spec.contains("source=") || spec.contains("src=") {
            spec.split(',')
                .find_map(|kv| {
                    kv.strip_prefix("source=")
                        .or_else(|| kv.strip_prefix("src="))
                })
                .unwrap_or("")
        } else {
            spec.split(':').next().unwrap_or("")
        };
        let host_path = source.starts_with(['/', '.', '~', '$']);
        if !host_path {
            return;
        }
        let arg = super::words::eval_word(source, self.home.as_deref()).arg;
        let t = self.target(&arg);
        if !matches!(t.loc, Loc::Inside | Loc::WsRoot) || t.under {
            self.note(
                Risk::Dangerous,
                format!("{what} mounts host path {} into the container", t.shown),
            );
        }
    }
}

/// Whether a cloud command line only reads.
fn cloud_reads(name: &str, words: &[&str], flags: &[&str]) -> bool {
    match name {
        "terraform" | "tofu" | "terragrunt" => {
            let sub = words.first().copied().unwrap_or("");
            match sub {
                "state" => matches!(words.get(1).copied(), Some("list" | "show" | "pull")),
                "workspace" => matches!(words.get(1).copied(), Some("list" | "show" | "select")),
                _ => cloud("reads").has(sub) && sub != "console",
            }
        }
        "aws" => {
            let op = words.get(1).copied().unwrap_or("");
            (words.first() == Some(&"s3") && op == "ls")
                || cloud("read_verbs").prefixes(op)
                || (words.first() == Some(&"sts") && op == "get-caller-identity")
                || (words.first() == Some(&"configure") && matches!(op, "list" | "get"))
        }
        "gcloud" | "az" | "gsutil" | "doctl" => {
            let verb = words.last().copied().unwrap_or("");
            words
                .iter()
                .any(|w| cloud("read_verbs").prefixes(w) || *w == "info" || *w == "version")
                && !words.iter().any(|w| is_destructive(w))
                || verb == "version"
        }
        "ansible" | "ansible-playbook" => flags.iter().any(|f| {
            *f == "--check" || *f == "-C" || *f == "--syntax-check" || *f == "--list-hosts"
        }),
        _ => {
            let sub = words.first().copied().unwrap_or("");
            let rest_ok = !words.iter().any(|w| is_destructive(w));
            cloud("reads").has(sub) && rest_ok
                || (sub == "config"
                    && matches!(
                        words.get(1).copied(),
                        Some("view" | "get-contexts" | "current-context")
                    ))
                || (sub == "auth" && words.get(1) == Some(&"can-i"))
                || (sub == "rollout" && matches!(words.get(1).copied(), Some("status" | "history")))
        }
    }
}

fn is_destructive(w: &str) -> bool {
    cloud("changes").prefixes(w)
}

fn cloud(key: &str) -> &'static rules::Names {
    rules::raw().list("cloud", key)
}

fn containers(key: &str) -> &'static rules::Names {
    rules::raw().list("containers", key)
}

/// Whether every argument is one of `info` (help or version).
fn only_info(info: &rules::Names, args: &[Arg]) -> bool {
    !args.is_empty() && args.iter().all(|a| a.lit().is_some_and(|t| info.has(t)))
}
