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
    pub(super) fn cloud(&mut self, cmd: &Cmd<'_>) {
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
        if words.is_empty() || cloud("info").all_of(cmd.args.iter().map(Arg::lit)) {
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

    pub(super) fn container(&mut self, cmd: &Cmd<'_>) {
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
        if reads || containers("info").all_of(cmd.args.iter().map(Arg::lit)) {
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

/// Whether a cloud command line only reads (how: the `[cloud]` lists).
fn cloud_reads(name: &str, words: &[&str], flags: &[&str]) -> bool {
    let first = words.first().copied().unwrap_or("");
    let second = words.get(1).copied().unwrap_or("");
    let unchanged = !words.iter().any(|w| cloud("changes").prefixes(w));
    let verb = |w: &str| cloud("read_verbs").prefixes(w);
    let groups = ["by-flags", "by-any-verb", "by-first", "by-verb"];
    let group = groups.into_iter().find(|g| cloud(g).has(name));
    let pair = format!("{} {first} {second}", group.unwrap_or("default"));
    match group {
        Some("by-flags") => flags.iter().any(|f| cloud("check_flags").has(f)),
        Some("by-any-verb") => {
            let reads = words
                .iter()
                .any(|w| verb(w) || cloud("any-verb-reads").has(w));
            reads && unchanged || words.last().is_some_and(|w| *w == "version")
        }
        _ if cloud("read_pairs").has(&pair) => true,
        Some("by-first") => cloud("reads").has(first) && !cloud("by-first-not").has(first),
        Some(_) => verb(second),
        None => cloud("reads").has(first) && unchanged,
    }
}

fn cloud(key: &str) -> &'static rules::Names {
    rules::raw().list("cloud", key)
}

fn containers(key: &str) -> &'static rules::Names {
    rules::raw().list("containers", key)
}
