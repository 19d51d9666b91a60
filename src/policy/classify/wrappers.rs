//! Commands that run other commands. Rule: a wrapper is unwrapped and the
//! command it runs is judged (with the wrapper's own risk on top: `sudo` is
//! dangerous, `nsenter` too); a command line it takes as one string (`su -c`,
//! `flock -c`, `watch`, `env -S`) is parsed as a script; words it fills in at
//! run time (`xargs`, `parallel`, `find -exec`) are substituted when their
//! input is literal text and unknown otherwise. The wrappers are the
//! [`WRAPPERS`] table plus `env`, `time`, `command`, `xargs`, `watch` and
//! `parallel`, which need a little more.

use super::commands::{Cmd, parse_opts};
use super::walk::{Input, Stage, Walker};
use super::words::Arg;
use crate::model::Risk;

/// A command that runs the command given in its arguments.
struct Wrapper {
    names: &'static [&'static str],
    /// Options taking the next word as their value.
    with_value: &'static [&'static str],
    /// Positional words before the command (timeout's duration, flock's file).
    skip: usize,
    /// Whether the words after the skipped ones are a command (false for `su`).
    command: bool,
    /// Options after which no command follows (`taskset -p`, `busybox --list`).
    no_command: &'static [&'static str],
    /// Options whose value is a shell command line (`su -c`, `flock -c`).
    script: &'static [&'static str],
    /// Options whose value is a file written (`strace -o`).
    writes: &'static [&'static str],
    /// The wrapper's own risk.
    risk: Option<(Risk, &'static str)>,
}

const W: Wrapper = Wrapper {
    names: &[],
    with_value: &[],
    skip: 0,
    command: true,
    no_command: &[],
    script: &[],
    writes: &[],
    risk: None,
};

const ROOT: Option<(Risk, &str)> = Some((Risk::Dangerous, "runs a command as another user"));

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        names: &["sudo", "doas"],
        with_value: &[
            "-u",
            "-g",
            "-C",
            "-h",
            "-p",
            "-r",
            "-t",
            "-U",
            "-D",
            "-R",
            "-T",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--other-user",
            "--chdir",
            "--chroot",
            "--close-from",
            "--command-timeout",
        ],
        risk: ROOT,
        ..W
    },
    Wrapper {
        names: &["su"],
        with_value: &["-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w"],
        command: false,
        script: &["-c", "--command", "--session-command"],
        risk: ROOT,
        ..W
    },
    Wrapper {
        names: &["runuser"],
        with_value: &["-u", "--user", "-g", "--group", "-G", "-s", "--shell", "-w"],
        script: &["-c", "--command", "--session-command"],
        risk: ROOT,
        ..W
    },
    Wrapper {
        names: &["sg"],
        skip: 1,
        script: &["-c"],
        risk: ROOT,
        ..W
    },
    Wrapper {
        names: &["pkexec", "gosu", "su-exec", "setpriv", "capsh"],
        with_value: &["--user", "--reuid", "--regid", "--groups", "--inh-caps"],
        risk: ROOT,
        ..W
    },
    Wrapper {
        names: &["chroot"],
        with_value: &["--userspec", "--groups"],
        skip: 1,
        risk: Some((Risk::Dangerous, "changes the root directory")),
        ..W
    },
    Wrapper {
        names: &["nsenter"],
        with_value: &["-t", "--target", "-S", "--setuid", "-G", "--setgid"],
        risk: Some((Risk::Dangerous, "enters another process's namespaces")),
        ..W
    },
    Wrapper {
        names: &["systemd-run"],
        with_value: &[
            "-p",
            "--property",
            "-u",
            "--unit",
            "-M",
            "--machine",
            "--uid",
            "--gid",
            "-E",
            "--setenv",
            "--description",
            "--slice",
            "--on-calendar",
            "--on-active",
        ],
        risk: Some((Risk::Dangerous, "starts a system service")),
        ..W
    },
    Wrapper {
        names: &["unshare"],
        with_value: &[
            "-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd",
        ],
        risk: Some((Risk::Moderate, "runs a command in new namespaces")),
        ..W
    },
    Wrapper {
        names: &["nice"],
        with_value: &["-n", "--adjustment"],
        ..W
    },
    Wrapper {
        names: &[
            "nohup",
            "builtin",
            "setsid",
            "catchsegv",
            "unbuffer",
            "chronic",
            "tini",
            "dumb-init",
            "ccache",
            "sccache",
            "distcc",
            "dbus-run-session",
            "caffeinate",
            "firejail",
            "fakeroot",
            "linux32",
            "linux64",
            "rlwrap",
        ],
        ..W
    },
    Wrapper {
        names: &["torsocks", "proxychains", "proxychains4", "tsocks"],
        with_value: &["-f", "-u", "-p", "-a", "-P"],
        risk: Some((Risk::Moderate, "sends a command's traffic through a proxy")),
        ..W
    },
    Wrapper {
        names: &["timeout"],
        with_value: &["-s", "--signal", "-k", "--kill-after"],
        skip: 1,
        ..W
    },
    Wrapper {
        names: &["faketime", "setarch"],
        skip: 1,
        with_value: &["-f"],
        ..W
    },
    Wrapper {
        names: &["stdbuf"],
        with_value: &["-i", "-o", "-e", "--input", "--output", "--error"],
        ..W
    },
    Wrapper {
        names: &["ionice"],
        with_value: &["-c", "--class", "-n", "--classdata"],
        no_command: &["-p", "--pid", "-P", "--pgid", "-u", "--uid"],
        ..W
    },
    Wrapper {
        names: &["taskset"],
        skip: 1,
        no_command: &["-p", "--pid"],
        ..W
    },
    Wrapper {
        names: &["chrt"],
        with_value: &[
            "-T",
            "--sched-runtime",
            "-P",
            "--sched-period",
            "-D",
            "--sched-deadline",
        ],
        skip: 1,
        no_command: &["-p", "--pid", "-m", "--max"],
        ..W
    },
    Wrapper {
        names: &["flock"],
        with_value: &["-w", "--timeout", "-E", "--conflict-exit-code"],
        skip: 1,
        script: &["-c", "--command"],
        ..W
    },
    Wrapper {
        names: &["prlimit", "numactl"],
        with_value: &["-N", "-m", "-C", "-i", "-P", "--cpunodebind", "--membind"],
        no_command: &["-p", "--pid", "-s", "--show", "-H", "--hardware"],
        ..W
    },
    Wrapper {
        names: &["exec"],
        with_value: &["-a"],
        ..W
    },
    Wrapper {
        names: &["busybox"],
        no_command: &["--list", "--list-full", "--install", "--help"],
        ..W
    },
    Wrapper {
        names: &["strace", "ltrace"],
        with_value: &[
            "-e", "-p", "-s", "-u", "-E", "-P", "-I", "-a", "-b", "-X", "-O", "-S",
        ],
        writes: &["-o", "--output"],
        no_command: &["-p", "--attach"],
        ..W
    },
    Wrapper {
        names: &["script"],
        with_value: &[
            "-E",
            "--echo",
            "-I",
            "--log-in",
            "-O",
            "--log-out",
            "-B",
            "--log-io",
            "-T",
            "--log-timing",
            "-m",
        ],
        command: false,
        script: &["-c", "--command"],
        ..W
    },
    Wrapper {
        names: &["ssh-agent"],
        with_value: &["-a", "-E", "-P", "-t", "-O"],
        ..W
    },
    Wrapper {
        names: &["xvfb-run"],
        with_value: &[
            "-n",
            "--server-num",
            "-s",
            "--server-args",
            "-f",
            "--auth-file",
            "-e",
            "--error-file",
            "-p",
        ],
        ..W
    },
];

impl Walker {
    /// Unwraps wrapper commands; returns false when `cmd` is not one.
    pub(crate) fn wrapper(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) -> bool {
        let inner: Vec<Arg> = match cmd.name {
            "env" => return self.env(cmd, stage),
            "time" => self.time(cmd),
            "command" => match self.command_builtin(cmd) {
                Some(inner) => inner,
                None => return true,
            },
            "xargs" => return self.xargs(cmd),
            "parallel" | "sem" => return self.parallel(cmd),
            "watch" => return self.watch(cmd),
            name => match WRAPPERS.iter().find(|w| w.names.contains(&name)) {
                Some(w) => match self.unwrap(w, cmd) {
                    Some(inner) => inner,
                    None => return true,
                },
                None => return false,
            },
        };
        self.run_inner(&inner, cmd, stage);
        true
    }

    /// Judges the wrapped command (or notes that there is none).
    pub(crate) fn run_inner(&mut self, inner: &[Arg], cmd: &Cmd<'_>, stage: &mut Stage) {
        if inner.is_empty() {
            self.note(Risk::Safe, format!("`{}` runs no command", cmd.shown));
        } else {
            stage.output = self.run(inner, cmd.input).output;
        }
    }

    /// The command a table wrapper runs; None when it was judged already.
    fn unwrap(&mut self, w: &Wrapper, cmd: &Cmd<'_>) -> Option<Vec<Arg>> {
        if let Some((risk, why)) = w.risk {
            self.note(risk, format!("`{}` {why}", cmd.shown));
        }
        let with: Vec<&str> = [w.with_value, w.script, w.writes].concat();
        let lead = leading_only(cmd.args, &with);
        let opts = parse_opts(&lead, &with);
        let rest = leading_options(cmd.args, &with);
        for out in w.writes.iter().filter_map(|o| opts.value_of(&[o])) {
            self.write_to(&out, &format!("`{}`", cmd.shown));
        }
        let after_skip = rest.get(w.skip.min(rest.len())..).unwrap_or(&[]);
        let script = opts.value_of(w.script).or_else(|| {
            let at = after_skip
                .iter()
                .position(|a| a.lit().is_some_and(|t| w.script.contains(&t)));
            at.filter(|p| *p == 0 || !w.command)
                .map(|p| after_skip.get(p + 1).cloned().unwrap_or_default())
        });
        if let Some(code) = script {
            self.code_string(&code, &cmd.shown);
            return None;
        }
        let stops = w.no_command.iter().any(|n| {
            let short = n.len() == 2 && !n.starts_with("--");
            opts.flags
                .iter()
                .any(|f| f == n || (short && !f.starts_with("--") && f.contains(&n[1..])))
        });
        if stops || !w.command {
            self.note(Risk::Safe, format!("`{}` runs no command", cmd.shown));
            if !w.command && w.risk.is_some() && !stops {
                self.stdin_shell(cmd);
            }
            return None;
        }
        let inner = skip_assignments(after_skip.to_vec());
        for a in after_skip.iter().take(after_skip.len() - inner.len()) {
            self.assignment_word(a, &cmd.shown);
        }
        if inner.is_empty() && w.risk == ROOT {
            // `sudo -s`, `sudo -i`: a root shell reading standard input.
            self.stdin_shell(cmd);
        }
        Some(inner)
    }

    /// `su` without `-c`: a shell reading its standard input.
    fn stdin_shell(&mut self, cmd: &Cmd<'_>) {
        match cmd.input {
            Input::Terminal => {}
            Input::Text(Some(text)) => self.script(text),
            _ => self.unclassifiable(format!(
                "`{}` runs a shell on input the classifier cannot read",
                cmd.shown
            )),
        }
    }

    /// `VAR=value` given to env or sudo.
    pub(crate) fn assignment_word(&mut self, a: &Arg, shown: &str) {
        let Some((name, value)) = a.raw.split_once('=') else {
            return;
        };
        let value = self.word(value);
        self.assign_variable(name, &value, shown, None);
    }

    /// `command [-pvV] cmd`: -v/-V only look the name up.
    fn command_builtin(&mut self, cmd: &Cmd<'_>) -> Option<Vec<Arg>> {
        let lead = leading_only(cmd.args, &[]);
        let lookup = lead
            .iter()
            .filter_map(Arg::lit)
            .any(|t| !t.starts_with("--") && (t.contains('v') || t.contains('V')));
        if lookup {
            self.note(
                Risk::Safe,
                format!("`{}` only looks a command up", cmd.shown),
            );
            return None;
        }
        Some(leading_options(cmd.args, &[]))
    }

    fn env(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) -> bool {
        let with = ["-u", "--unset", "-C", "--chdir", "-S", "--split-string"];
        let opts = parse_opts(&leading_only(cmd.args, &with), &with);
        if let Some(script) = opts.value_of(&["-S", "--split-string"]) {
            let rest = leading_options(cmd.args, &with);
            let mut joined = vec![script];
            joined.extend(rest);
            self.code_string(&join_args(&joined), &cmd.shown);
            return true;
        }
        let saved = self.cwd.clone();
        if let Some(dir) = opts.value_of(&["-C", "--chdir"]) {
            let t = self.target(&dir);
            let known = t.fixed();
            self.cwd = known.then(|| t.shown.into());
        }
        let after = leading_options(cmd.args, &with);
        let inner = skip_assignments(after.clone());
        for a in after.iter().take(after.len() - inner.len()) {
            self.assignment_word(a, &cmd.shown);
        }
        if inner.is_empty() {
            self.note(
                Risk::Safe,
                format!("`{}` only prints the environment", cmd.shown),
            );
        } else {
            self.run_inner(&inner, cmd, stage);
        }
        self.cwd = saved;
        true
    }

    fn time(&mut self, cmd: &Cmd<'_>) -> Vec<Arg> {
        let with = ["-f", "--format", "-o", "--output"];
        let opts = parse_opts(&leading_only(cmd.args, &with), &with);
        if let Some(out) = opts.value_of(&["-o", "--output"]) {
            self.write_to(&out, &format!("`{}`", cmd.shown));
        }
        leading_options(cmd.args, &with)
    }

    /// `watch [options] command...`: the words are joined and run by `sh -c`.
    fn watch(&mut self, cmd: &Cmd<'_>) -> bool {
        let with = ["-n", "--interval", "-d", "-q", "--equexit", "--chgexit"];
        let opts = parse_opts(&leading_only(cmd.args, &with), &with);
        let rest = leading_options(cmd.args, &with);
        if opts.has('x', &["--exec"]) {
            let mut stage = Stage::default();
            self.run_inner(&rest, cmd, &mut stage);
        } else if rest.is_empty() {
            self.note(Risk::Safe, format!("`{}` runs no command", cmd.shown));
        } else {
            self.code_string(&join_args(&rest), &cmd.shown);
        }
        true
    }

    /// `xargs [options] command...`: the command runs with words read from input.
    fn xargs(&mut self, cmd: &Cmd<'_>) -> bool {
        let with = [
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-E",
            "-e",
            "-I",
            "-i",
            "--replace",
            "-L",
            "-l",
            "--max-lines",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
            "--process-slot-var",
            "--eof",
        ];
        let opts = parse_opts(&leading_only(cmd.args, &with), &with);
        let mut inner = leading_options(cmd.args, &with);
        if inner.is_empty() {
            inner.push(Arg::literal("echo"));
        }
        let from_file = opts.value_of(&["-a", "--arg-file"]).is_some();
        let items = if from_file {
            None
        } else {
            input_words(cmd.input)
        };
        let replace = opts
            .value_of(&["-I", "-i", "--replace"])
            .and_then(|r| r.text)
            .or_else(|| opts.has('i', &[]).then(|| "{}".to_string()))
            .filter(|r| !r.is_empty());
        for args in fill_in(&inner, items.as_deref(), replace.as_deref(), false) {
            self.run(&args, &Input::Terminal);
        }
        self.note(
            Risk::Safe,
            format!("`{}` runs a command on its input", cmd.shown),
        );
        true
    }

    /// GNU parallel: `parallel [options] command ::: args`; the command runs in a shell.
    fn parallel(&mut self, cmd: &Cmd<'_>) -> bool {
        let with = [
            "-j",
            "--jobs",
            "-S",
            "--sshlogin",
            "-a",
            "--arg-file",
            "--colsep",
            "-d",
            "--delimiter",
            "-I",
            "--tmpdir",
            "--results",
            "--joblog",
            "-n",
            "--max-args",
            "-N",
            "-L",
            "--timeout",
            "--retries",
            "--env",
            "--workdir",
            "--wd",
            "--basefile",
            "-E",
        ];
        let opts = parse_opts(&leading_only(cmd.args, &with), &with);
        if opts.value_of(&["-S", "--sshlogin"]).is_some() {
            self.network(format!("`{}` runs commands on other hosts", cmd.shown));
        }
        let rest = leading_options(cmd.args, &with);
        let sep = rest
            .iter()
            .position(|a| a.lit().is_some_and(|t| t.starts_with(":::")));
        let (command, sources) = match sep {
            Some(p) => (rest.get(..p).unwrap_or(&[]), rest.get(p..).unwrap_or(&[])),
            None => (rest.as_slice(), &[][..]),
        };
        let items: Option<Vec<String>> = match sources.first().and_then(Arg::lit) {
            Some(":::") => sources
                .get(1..)
                .unwrap_or(&[])
                .iter()
                .map(|a| a.text.clone())
                .collect(),
            Some(_) => None,
            None => input_words(cmd.input),
        };
        let replace = opts.value_of(&["-I"]).and_then(|r| r.text);
        let replace = replace.as_deref().unwrap_or("{}");
        for args in fill_in(command, items.as_deref(), Some(replace), true) {
            match args.iter().map(Arg::lit).collect::<Option<Vec<_>>>() {
                Some(words) => self.subshell_script(&words.join(" ")),
                None => {
                    self.run(&args, &Input::Terminal);
                }
            }
        }
        self.note(
            Risk::Safe,
            format!("`{}` runs a command on its input", cmd.shown),
        );
        true
    }
}

/// Most input items substituted one by one; more are judged as unknown words.
const MAX_ITEMS: usize = 16;

/// The words a literal standard input gives (xargs, parallel); None when unknown.
fn input_words(input: &Input) -> Option<Vec<String>> {
    match input {
        Input::Text(Some(t)) | Input::Pipe(Some(t)) => Some(
            t.split_whitespace()
                .map(|s| s.trim_matches(['\'', '"']).to_string())
                .collect(),
        ),
        _ => None,
    }
}

/// The command lines a word-filling wrapper runs: `replace` marks the place
/// of each item (else items are appended); unknown items give unknown words.
/// With `braces`, GNU parallel's other replacement strings (`{.}`, `{/}`) are unknown too.
fn fill_in(
    command: &[Arg],
    items: Option<&[String]>,
    replace: Option<&str>,
    braces: bool,
) -> Vec<Vec<Arg>> {
    let one = |item: Option<&str>| -> Vec<Arg> {
        let value = |a: &Arg, with: &str| match (item, a.lit()) {
            (Some(v), Some(t)) => Arg::literal(&t.replace(with, v)),
            _ => Arg::unknown(&a.raw),
        };
        let mut used = false;
        let mut out: Vec<Arg> = command
            .iter()
            .map(|a| match (replace, a.lit()) {
                (Some(r), Some(t)) if t.contains(r) => {
                    used = true;
                    value(a, r)
                }
                (_, Some(t)) if braces && t.contains('{') && t.contains('}') => {
                    used = true;
                    Arg::unknown(&a.raw)
                }
                _ => a.clone(),
            })
            .collect();
        if !used {
            out.push(item.map_or_else(|| Arg::unknown("<input>"), Arg::literal));
        }
        out
    };
    match items {
        Some(list) if !list.is_empty() && list.len() <= MAX_ITEMS => {
            list.iter().map(|i| one(Some(i))).collect()
        }
        Some([]) => vec![command.to_vec()],
        _ => vec![one(None)],
    }
}

/// The arguments after the wrapper's own leading options.
pub(crate) fn leading_options(args: &[Arg], with_value: &[&str]) -> Vec<Arg> {
    let n = leading_len(args, with_value);
    args.get(n..).unwrap_or(&[]).to_vec()
}

/// The wrapper's own leading options.
pub(crate) fn leading_only(args: &[Arg], with_value: &[&str]) -> Vec<Arg> {
    let n = leading_len(args, with_value);
    args.get(..n).unwrap_or(&[]).to_vec()
}

/// How many leading arguments are options (and their values) of the wrapper.
fn leading_len(args: &[Arg], with_value: &[&str]) -> usize {
    let mut i = 0;
    while let Some(t) = args.get(i).and_then(Arg::lit) {
        if t == "--" {
            return i + 1;
        }
        let is_opt = (t.starts_with('-') || t.starts_with('+')) && t.len() > 1;
        if !is_opt {
            break;
        }
        let key = if t.starts_with("--") {
            super::commands::canonical_long(t, with_value)
        } else {
            t.get(..2).unwrap_or(t)
        };
        let takes_next = with_value.contains(&key) && (t.len() == 2 || t.starts_with("--"));
        i += if takes_next && !t.contains('=') { 2 } else { 1 };
    }
    i.min(args.len())
}

/// Drops leading `VAR=value` words (sudo, env).
fn skip_assignments(args: Vec<Arg>) -> Vec<Arg> {
    let n = args.iter().take_while(|a| is_assignment(&a.raw)).count();
    args.into_iter().skip(n).collect()
}

fn is_assignment(t: &str) -> bool {
    t.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `eval a b c` runs "a b c": known only when every word is.
pub(crate) fn join_args(args: &[Arg]) -> Arg {
    let texts: Option<Vec<&str>> = args.iter().map(Arg::lit).collect();
    Arg {
        text: texts.map(|t| t.join(" ")),
        glob_at: None,
        raw: args
            .iter()
            .map(|a| a.raw.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        procsub: false,
        scratch: None,
    }
}
