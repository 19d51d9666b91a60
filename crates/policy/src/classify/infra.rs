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

use super::commands::{Cmd, parse_opts};
use super::paths::Loc;
use super::rules;
use super::walk::Walker;
use super::words::Arg;
use crate::model::Risk;

impl Walker {
    pub(super) fn cloud(&mut self, cmd: &Cmd<'_>) {
        let mut words: Vec<&str> = Vec::new();
        let mut skip_value = false;
        let lits = || cmd.args.iter().map(|a| a.lit().unwrap_or("?"));
        for t in lits() {
            if std::mem::take(&mut skip_value) {
                continue;
            }
            if t.starts_with('-') && t != "--version" && t != "--help" {
                skip_value = cloud("value_flags").has(t);
                continue;
            }
            words.push(t);
        }
        let flags: Vec<&str> = lits().filter(|t| t.starts_with('-')).collect();
        if words.is_empty() || cloud("info").all_of(cmd.args.iter().map(Arg::lit)) {
            return self.say(Risk::Safe, cmd, "only prints help or its version");
        }
        let why = "reaches the network with the runner's credentials";
        self.network(format!("`{}` {why}", cmd.shown));
        let reads = "reads infrastructure state (network, credentials)";
        match cloud_reads(cmd.name, &words, &flags) {
            true => self.say(Risk::Moderate, cmd, reads),
            false => self.say(Risk::Dangerous, cmd, "changes live infrastructure"),
        }
    }

    pub(super) fn container(&mut self, cmd: &Cmd<'_>) {
        let lits = cmd.args.iter().filter_map(Arg::lit);
        let words: Vec<&str> = lits.filter(|t| !t.starts_with('-')).collect();
        let what = format!("`{}`", cmd.shown);
        let sub = words.first().copied().unwrap_or("");
        let volumes = cmd.args.iter().any(|a| a.is("-v") || a.is("--volumes"));
        let destroys = words.iter().any(|w| containers("destroys").has(w));
        if destroys || volumes && words.contains(&"down") {
            let why = "removes containers, images or volumes";
            return self.say(Risk::Dangerous, cmd, why);
        }
        if words.iter().any(|w| containers("runs").has(w)) {
            return self.container_run(cmd, &what);
        }
        let group_reads = words.get(1).is_some_and(|w| containers("reads").has(w));
        let reads = containers("reads").has(sub) || containers("groups").has(sub) && group_reads;
        if reads || containers("info").all_of(cmd.args.iter().map(Arg::lit)) {
            return self.say(Risk::Safe, cmd, "only reads");
        }
        if containers("registry").has(sub) {
            self.network(format!("{what} reaches a registry"));
        }
        self.say(Risk::Moderate, cmd, "builds or changes local containers");
    }

    /// `docker run`/`create`/`exec`/`compose up`: dangerous when the container gets the host.
    fn container_run(&mut self, cmd: &Cmd<'_>, what: &str) {
        let c = containers;
        let mounts = ["-v", "--volume", "--mount"];
        let valued: Vec<&str> = mounts.into_iter().chain(c("host_options").iter()).collect();
        let opts = parse_opts(cmd.args, &valued);
        let host_flag = |f: &String| c("host_flags").has(f) || c("host_prefixes").prefixes(f);
        let host_value = |(n, v): &(String, Arg)| c("host_options").has(n) && v.is("host");
        let (host, unknown) = (
            "gives the container access to the host",
            "mounts a host path only known at run time",
        );
        if opts.flags.iter().any(host_flag) || opts.values.iter().any(host_value) {
            self.say(Risk::Dangerous, cmd, host);
        }
        for spec in opts.values_of(&mounts) {
            match spec.lit() {
                Some(spec) => self.bind_mount(spec, what),
                None => self.say(Risk::Dangerous, cmd, unknown),
            }
        }
        self.say(Risk::Moderate, cmd, "runs a container");
    }

    fn bind_mount(&mut self, spec: &str, what: &str) {
        let keyed = spec
            .split(',')
            .map(|kv| kv.strip_prefix("source=").or(kv.strip_prefix("src=")));
        let source = match spec.contains("source=") || spec.contains("src=") {
            true => keyed.flatten().next().unwrap_or(""),
            false => spec.split(':').next().unwrap_or(""),
        };
        if !source.starts_with(['/', '.', '~', '$']) {
            return;
        }
        let arg = super::words::eval_word(source, self.home.as_deref()).arg;
        if !self.inside_or(&arg, Loc::Inside) {
            let t = self.target(&arg);
            let why = format!("mounts host path {} into the container", t.shown);
            self.note(Risk::Dangerous, format!("{what} {why}"));
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
            let read = |w: &&str| verb(w) || cloud("any-verb-reads").has(w);
            let reads = words.iter().any(read);
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
