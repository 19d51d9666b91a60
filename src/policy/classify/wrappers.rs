//! Commands that run other commands: wrappers (`sudo`, `env`, `xargs`, `nice`,
//! `timeout`, ...) are unwrapped and the wrapped command judged; shells and
//! `eval` have their script strings parsed recursively; interpreters are moderate,
//! and dangerous when they execute code read from a pipe.

use super::commands::{Cmd, parse_opts};
use super::walk::{Input, Stage, Walker};
use super::words::Arg;
use crate::model::Risk;

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "busybox",
];
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "deno",
    "bun",
    "lua",
    "tclsh",
    "Rscript",
    "pwsh",
    "osascript",
    "irb",
    "jshell",
    "groovy",
];

impl Walker {
    /// Unwraps wrapper commands; returns false when `cmd` is not one.
    pub(crate) fn wrapper(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) -> bool {
        let inner: Vec<Arg> = match cmd.name {
            "sudo" | "doas" => {
                self.note(Risk::Dangerous, format!("`{}` runs as root", cmd.shown));
                let with = [
                    "-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U", "-D", "-R", "-T",
                ];
                skip_assignments(leading_options(cmd.args, &with))
            }
            "env" => return self.env(cmd, stage),
            "nice" => leading_options(cmd.args, &["-n", "--adjustment"]),
            "nohup" | "builtin" => cmd.args.to_vec(),
            "time" => self.time(cmd),
            "timeout" => {
                let rest = leading_options(cmd.args, &["-s", "--signal", "-k", "--kill-after"]);
                rest.get(1..).unwrap_or(&[]).to_vec()
            }
            "command" if cmd.args.iter().any(|a| a.is("-v") || a.is("-V")) => {
                self.note(
                    Risk::Safe,
                    format!("`{}` only looks a command up", cmd.shown),
                );
                return true;
            }
            "command" => leading_options(cmd.args, &[]),
            "exec" => leading_options(cmd.args, &["-a"]),
            "stdbuf" => leading_options(cmd.args, &["-i", "-o", "-e"]),
            "ionice" => leading_options(cmd.args, &["-c", "-n", "-p", "-P", "-u"]),
            "setsid" => leading_options(cmd.args, &[]),
            "xargs" => self.xargs(cmd),
            _ => return false,
        };
        if inner.is_empty() {
            self.note(Risk::Safe, format!("`{}` runs no command", cmd.shown));
        } else {
            let out = self.run(&inner, cmd.input);
            stage.stdin_script = out.stdin_script;
            stage.output = out.output;
        }
        true
    }

    fn env(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) -> bool {
        let with = ["-u", "--unset", "-C", "--chdir", "-S", "--split-string"];
        let opts = parse_opts(&leading_only(cmd.args, &with), &with);
        if let Some(script) = opts.value_of(&["-S", "--split-string"]) {
            self.code_string(&script, &cmd.shown);
            return true;
        }
        let saved = self.cwd.clone();
        if let Some(dir) = opts.value_of(&["-C", "--chdir"]) {
            let t = self.target(&dir);
            let known = !t.under && t.loc != super::paths::Loc::Unknown;
            self.cwd = known.then(|| t.shown.into());
        }
        let inner = skip_assignments(leading_options(cmd.args, &with));
        for a in cmd.args.iter().filter_map(Arg::lit) {
            if let Some((name, _)) = a.split_once('=') {
                self.env_assignment(name, &cmd.shown);
            }
        }
        if inner.is_empty() {
            self.note(
                Risk::Safe,
                format!("`{}` only prints the environment", cmd.shown),
            );
        } else {
            let out = self.run(&inner, cmd.input);
            stage.stdin_script = out.stdin_script;
            stage.output = out.output;
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

    fn xargs(&mut self, cmd: &Cmd<'_>) -> Vec<Arg> {
        let with = [
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-E",
            "-I",
            "-L",
            "--max-lines",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
            "--process-slot-var",
        ];
        let opts = parse_opts(&leading_only(cmd.args, &with), &with);
        let mut inner = leading_options(cmd.args, &with);
        if inner.is_empty() {
            return inner;
        }
        match opts.value_of(&["-I"]).and_then(|r| r.text) {
            Some(rep) if !rep.is_empty() => {
                for a in &mut inner {
                    if a.lit().is_some_and(|t| t.contains(&rep)) {
                        *a = Arg::unknown(&a.raw);
                    }
                }
            }
            _ => inner.push(Arg::unknown("<xargs input>")),
        }
        inner
    }

    /// Shells, eval, source, trap and interpreters.
    pub(crate) fn shell_like(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) -> bool {
        match cmd.name {
            n if SHELLS.contains(&n) => self.shell(cmd, stage),
            "eval" => {
                let joined = join_args(cmd.args);
                self.code_string(&joined, &cmd.shown);
            }
            "trap" => match cmd.args.first() {
                Some(action) if cmd.args.len() > 1 && !action.is("-") => {
                    self.code_string(action, &cmd.shown);
                }
                _ => self.note(Risk::Safe, format!("`{}` only lists traps", cmd.shown)),
            },
            "source" | "." => {
                let risk = if cmd.args.first().is_some_and(|a| a.procsub) {
                    Risk::Dangerous
                } else {
                    Risk::Moderate
                };
                self.note(risk, format!("`{}` runs a script file", cmd.shown));
            }
            n if is_interpreter(n) => self.interpreter(cmd, stage),
            _ => return false,
        }
        true
    }

    /// Classifies a string that will run as shell code.
    fn code_string(&mut self, code: &Arg, shown: &str) {
        match code.lit() {
            Some(text) => {
                self.note(Risk::Safe, format!("`{shown}` runs a literal script"));
                self.script(text);
            }
            None => self.note(
                Risk::Dangerous,
                format!("`{shown}` runs code only known at run time"),
            ),
        }
    }

    fn shell(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) {
        let with = ["-o", "+o", "-O", "+O", "--rcfile", "--init-file"];
        let opts = parse_opts(&leading_only(cmd.args, &with), &with);
        let rest = leading_options(cmd.args, &with);
        if opts.has('c', &[]) {
            match rest.first() {
                Some(code) => self.code_string(code, &cmd.shown),
                None => self.unclassifiable(format!("`{}` has -c without a script", cmd.shown)),
            }
            return;
        }
        let from_stdin = opts.has('s', &[]) || rest.first().is_none_or(|a| a.is("-"));
        if from_stdin {
            self.stdin_code(cmd, stage);
        } else if rest.first().is_some_and(|a| a.procsub) {
            self.note(
                Risk::Dangerous,
                format!("`{}` runs a script produced by another command", cmd.shown),
            );
        } else {
            self.note(
                Risk::Moderate,
                format!("`{}` runs a shell script", cmd.shown),
            );
        }
    }

    /// A shell or interpreter executing its standard input.
    fn stdin_code(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) {
        let shell = SHELLS.contains(&cmd.name);
        match cmd.input {
            Input::Pipe => {
                stage.stdin_script = Some(cmd.name.to_string());
                // The pipeline judges the producer: literal text is classified, anything else is dangerous.
                self.note(Risk::Safe, format!("`{}` runs piped code", cmd.shown));
            }
            Input::Text(Some(text)) if shell => {
                self.note(Risk::Safe, format!("`{}` runs a here-document", cmd.shown));
                self.script(text);
            }
            Input::Text(None) => self.note(
                Risk::Dangerous,
                format!("`{}` runs code only known at run time", cmd.shown),
            ),
            _ => self.note(
                Risk::Moderate,
                format!("`{}` runs code from its input (effects unknown)", cmd.shown),
            ),
        }
    }

    fn interpreter(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) {
        let version_only = !cmd.args.is_empty()
            && cmd
                .args
                .iter()
                .all(|a| a.is("--version") || a.is("-V") || a.is("-v") || a.is("--help"));
        if version_only {
            self.note(
                Risk::Safe,
                format!("`{}` only prints its version", cmd.shown),
            );
            return;
        }
        let code_flags = [
            "-c", "-e", "-E", "-m", "-r", "-p", "--eval", "--print", "-x",
        ];
        let opts = parse_opts(cmd.args, &code_flags);
        let has_code = !opts.values.is_empty()
            || opts
                .flags
                .iter()
                .any(|f| code_flags.iter().any(|c| f.starts_with(c)))
            || opts.pos.first().is_some_and(|a| !a.is("-"));
        if !has_code {
            self.stdin_code(cmd, stage);
            return;
        }
        if cmd.name == "perl" && opts.has('i', &[]) {
            for f in opts.pos.iter() {
                self.write_to(f, &format!("`{}`", cmd.shown));
            }
        }
        self.note(
            Risk::Moderate,
            format!("`{}` runs interpreter code (effects unknown)", cmd.shown),
        );
    }
}

fn is_interpreter(name: &str) -> bool {
    INTERPRETERS.contains(&name)
        || name
            .strip_prefix("python")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The arguments after the wrapper's own leading options.
fn leading_options(args: &[Arg], with_value: &[&str]) -> Vec<Arg> {
    let n = leading_len(args, with_value);
    args.get(n..).unwrap_or(&[]).to_vec()
}

/// The wrapper's own leading options.
fn leading_only(args: &[Arg], with_value: &[&str]) -> Vec<Arg> {
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
            t
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
    let n = args
        .iter()
        .take_while(|a| a.lit().is_some_and(is_assignment))
        .count();
    args.into_iter().skip(n).collect()
}

fn is_assignment(t: &str) -> bool {
    t.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `eval a b c` runs "a b c": known only when every word is.
fn join_args(args: &[Arg]) -> Arg {
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
    }
}
