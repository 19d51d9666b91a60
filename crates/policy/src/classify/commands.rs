//! Judges one simple command by its name and arguments: one table says which
//! handler judges it (`dispatch_known`); unknown commands are moderate, never
//! safe. Also the option reader every handler uses (`parse_opts`, `leading`).

use super::rules;
use super::walk::{Input, Stage, Walker};
use super::words::Arg;
use crate::model::Risk;

/// A command ready to be judged.
pub(super) struct Cmd<'a> {
    /// Basename of the command (`/bin/rm` → `rm`).
    pub name: &'a str,
    pub args: &'a [Arg],
    /// The command as written, for reasons.
    pub shown: String,
    pub input: &'a Input,
}

impl Walker {
    /// Judges a command given as words (name first) with its standard input.
    pub(super) fn run(&mut self, args: &[Arg], input: &Input) -> Stage {
        let shown = show(args);
        let mut stage = Stage {
            shown: shown.clone(),
            ..Stage::default()
        };
        let Some((first, rest)) = args.split_first() else {
            return stage;
        };
        let Some(text) = first.lit() else {
            let why = "runs a command whose name is only known at run time";
            self.unclassifiable(format!("`{shown}` {why}"));
            return stage;
        };
        let cmd = Cmd {
            name: text.rsplit('/').next().unwrap_or(text),
            args: rest,
            shown,
            input,
        };
        let function = self.function_named(text);
        if function.is_some() {
            self.say(Risk::Safe, &cmd, "calls a function defined in the script");
        }
        // The definition may not have run (`if false; then rm() { :; }; fi`):
        // a function named like a command is judged as that command too.
        if !self.dispatch_known(&cmd, &mut stage) && function.is_none() {
            let why = format!("unknown command `{}` (effects unknown)", cmd.name);
            self.note(Risk::Moderate, why);
        }
        if function == Some(true) {
            self.cwd = None;
        }
        stage
    }

    /// Judges a command the classifier knows by name; false for an unknown
    /// one. The first arm that holds decides: wrappers, shells and builtins
    /// first, then the tables of tools and programs.
    fn dispatch_known(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) -> bool {
        let (r, n) = (rules::raw(), cmd.name);
        let first = |t: &str| cmd.args.first().is_some_and(|a| a.is(t));
        match n {
            "xargs" | "parallel" | "sem" => self.xargs(cmd),
            "cmake" if first("-E") => self.cmake_tool(cmd, stage),
            _ if r.wrapper(n).is_some() => self.table_wrapper(cmd, stage),
            _ if r.list("shells", "names").has(n) => self.shell(cmd),
            "eval" => self.code_string(&join_args(cmd.args), &cmd.shown),
            "trap" => self.trap(cmd),
            "source" | "." => self.source(cmd),
            _ if r.list("words", "declare").has(n) => self.declare(cmd),
            "read" | "mapfile" | "readarray" => self.read(cmd),
            "printf" if first("-v") => self.printf(cmd),
            "let" => (cmd.args.iter()).for_each(|a| self.arithmetic(a.lit().unwrap_or(&a.raw))),
            "unset" | "getopts" => self.names(cmd),
            "test" | "[" => self.test(cmd),
            "alias" | "enable" | "fc" | "hash" => self.shell_state(cmd),
            "shopt" => self.shopt(cmd),
            "set" => self.set(cmd),
            "git" => self.git(cmd),
            _ if r.subcommands(n).is_some() => self.by_subcommand(cmd),
            _ if r.list("network-clients", "names").has(n) => self.network_client(cmd),
            _ if r.list("cloud", "names").has(n) => self.cloud(cmd),
            _ if r.list("containers", "names").has(n) => self.container(cmd),
            "echo" | "printf" => {
                stage.output = literal_output(cmd);
                self.say(Risk::Safe, cmd, "only prints");
            }
            "cat" if cmd.args.is_empty() => {
                if let Input::Text(text) | Input::Pipe(text) = cmd.input {
                    stage.output.clone_from(text);
                }
                self.say(Risk::Safe, cmd, "only reads");
            }
            "cd" | "pushd" | "popd" => self.change_dir(cmd),
            "find" => self.find(cmd),
            "kill" if cmd.args.len() >= 2 && cmd.args.last().is_some_and(|a| a.is("-1")) => {
                self.say(Risk::Dangerous, cmd, "kills every process")
            }
            "hostname" if !cmd.args.is_empty() => {
                self.say(Risk::Dangerous, cmd, "renames the host")
            }
            "sed" | "gsed" => self.sed(cmd),
            "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => self.awk(cmd),
            "less" | "more" | "most" => self.pager(cmd),
            "fd" | "fdfind" => self.fd(cmd),
            "cp" | "mv" | "install" | "ln" | "scp" | "rsync" => self.copy(cmd),
            "tar" => self.tar(cmd),
            _ => match (r.interpreter(n), r.judged(n)) {
                (Some(i), _) => self.interpreter(i, cmd),
                (None, Some(p)) => self.program(p, cmd),
                (None, None) => return false,
            },
        }
        true
    }

    fn change_dir(&mut self, cmd: &Cmd<'_>) {
        let opts = parse_opts(cmd.args, &[]);
        let target = match (cmd.name, opts.pos.first()) {
            ("popd", _) => None,
            (_, None) => self.home.clone().map(std::path::PathBuf::from),
            (_, Some(arg)) if arg.is("-") => None,
            (_, Some(arg)) => {
                let t = self.target(arg);
                t.fixed().then(|| std::path::PathBuf::from(t.shown))
            }
        };
        self.oldpwd = std::mem::replace(&mut self.cwd, target);
        self.say(Risk::Safe, cmd, "changes directory");
    }
}

/// The text echo/printf print when all their arguments are static.
fn literal_output(cmd: &Cmd<'_>) -> Option<String> {
    let lits = cmd.args.iter().map(Arg::lit);
    let words: Option<Vec<&str>> = lits
        .filter(|t| !matches!(t, Some("-n" | "-e" | "-E")))
        .collect();
    let text = words?.join(" ");
    Some(text.replace("\\n", "\n"))
}

/// The words of a command as written, joined on one line for reasons. Not
/// cut: a cut could keep a secret's prefix that redaction no longer
/// recognises; `engine::decide_all` cuts reasons after redacting them.
pub(super) fn show(args: &[Arg]) -> String {
    join_args(args).raw.replace(['\n', '\r', '\t'], " ")
}

/// `eval a b c` runs "a b c": known only when every word is.
pub(super) fn join_args(args: &[Arg]) -> Arg {
    let texts: Option<Vec<&str>> = args.iter().map(Arg::lit).collect();
    let raw: Vec<&str> = args.iter().map(|a| a.raw.as_str()).collect();
    Arg {
        text: texts.map(|t| t.join(" ")),
        ..Arg::unknown(&raw.join(" "))
    }
}

/// Options and positional arguments of one command line.
#[derive(Debug, Default)]
pub(super) struct Opts {
    /// Flags as written (`-rf`, `--force`, `--out=x`).
    pub flags: Vec<String>,
    /// Options that took a value: (name, value).
    pub values: Vec<(String, Arg)>,
    /// Positional arguments, in order.
    pub pos: Vec<Arg>,
}

impl Opts {
    /// True when short flag `c` appears in a cluster or one of `long` is given,
    /// also abbreviated (`--no-preserve-roo`: getopt takes any unambiguous
    /// prefix; a prefix of a watched option counts as it, which errs on the
    /// cautious side).
    pub(super) fn has(&self, c: char, long: &[&str]) -> bool {
        self.flags.iter().any(|f| {
            let short = !f.starts_with("--") && f.len() > 1 && f.chars().skip(1).any(|x| x == c);
            let name = f.split_once('=').map_or(f.as_str(), |(n, _)| n);
            let is_long = f.starts_with("--") && long.iter().any(|l| long_matches(name, l));
            (c != '\0' && short) || is_long
        })
    }

    /// The values of the options `names`, in order.
    pub(super) fn values_of(&self, names: &[&str]) -> Vec<Arg> {
        let values = self.values.iter();
        let named = values.filter(|(n, _)| names.contains(&n.as_str()));
        named.map(|(_, v)| v.clone()).collect()
    }

    /// The value of the first of `names` that was given.
    pub(super) fn value_of(&self, names: &[&str]) -> Option<Arg> {
        self.values_of(names).into_iter().next()
    }
}

/// Splits arguments into flags, valued options and positionals.
/// `with_value` lists options (`-o`, `--output`) that take the next argument.
pub(super) fn parse_opts(args: &[Arg], with_value: &[&str]) -> Opts {
    parse(args, with_value, false)
}

/// A wrapper's own leading options; `pos` holds the words from the first
/// that is no option (or after `--`) on. `+o NAME` (a shell option turned
/// off) is skipped.
pub(super) fn leading(args: &[Arg], with_value: &[&str]) -> Opts {
    parse(args, with_value, true)
}

fn parse(args: &[Arg], with_value: &[&str], lead: bool) -> Opts {
    let mut out = Opts::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let text = arg.lit();
        let plus = lead && text.is_some_and(|t| t.starts_with('+') && t.len() > 1);
        let option = text.is_some_and(|t| t.starts_with('-') && t != "-");
        if lead && !plus && !option {
            out.pos.extend(std::iter::once(arg).chain(it).cloned());
            break;
        }
        let Some(t) = text else {
            unknown_option(arg, with_value, &mut out);
            continue;
        };
        if t == "--" {
            out.pos.extend(it.cloned());
            break;
        }
        if plus {
            let takes = |c: char| with_value.contains(&format!("+{c}").as_str());
            let first = t.char_indices().skip(1).find(|(_, c)| takes(*c));
            if first.is_some_and(|(i, c)| i + c.len_utf8() == t.len()) {
                it.next();
            }
        } else if option {
            parse_flag(t, arg, &mut it, with_value, &mut out);
        } else {
            out.pos.push(arg.clone());
        }
    }
    out
}

/// `--opt="$X"`, `-o"$X"`: the option is known, its value is not.
fn unknown_option(arg: &Arg, with_value: &[&str], out: &mut Opts) {
    let raw = arg.raw.trim_start_matches(['"', '\'']);
    let long = raw.split_once('=').map(|(n, _)| n);
    let long = long.filter(|n| is_long_name(n));
    let short = || {
        let mut letters = raw.strip_prefix('-')?.chars();
        let letters = letters.by_ref().take_while(char::is_ascii_alphanumeric);
        let mut keys = letters.map(|c| format!("-{c}"));
        keys.find(|k| with_value.contains(&k.as_str()))
    };
    match long.map(str::to_string).or_else(short) {
        Some(name) => {
            let key = canonical_long(&name, with_value).to_string();
            out.flags.push(name);
            out.values.push((key, Arg::unknown(&arg.raw)));
        }
        None => out.pos.push(arg.clone()),
    }
}

fn parse_flag<'a>(
    t: &str,
    arg: &Arg,
    it: &mut impl Iterator<Item = &'a Arg>,
    with_value: &[&str],
    out: &mut Opts,
) {
    out.flags.push(t.to_string());
    let takes = |k: &str| with_value.contains(&k);
    let (key, attached) = if t.starts_with("--") {
        let key = canonical_long(t, with_value);
        match t.split_once('=') {
            Some((_, value)) => (key.to_string(), Some(value)),
            None if takes(key) => (key.to_string(), None),
            None => return,
        }
    } else if takes(t) {
        // A multi-letter option with one dash (`-TT`, `-File`).
        (t.to_string(), None)
    } else {
        // A short cluster: the first letter taking a value takes the rest or the next word.
        let mut letters = t.char_indices().skip(1);
        let Some((i, c)) = letters.find(|(_, c)| takes(&format!("-{c}"))) else {
            return;
        };
        // The flags are the letters up to this one: the rest is its value.
        let end = i + c.len_utf8();
        if let Some(f) = out.flags.last_mut() {
            f.truncate(end);
        }
        (format!("-{c}"), t.get(end..).filter(|r| !r.is_empty()))
    };
    let value = match attached {
        Some(v) => literal_arg(v, arg),
        None => it.next().cloned().unwrap_or_default(),
    };
    out.values.push((key, value));
}

fn is_long_name(n: &str) -> bool {
    let name = n.strip_prefix("--").filter(|r| !r.is_empty());
    name.is_some_and(|r| r.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// Whether `given` (a long option as written, without `=value`) names `long`:
/// exactly, or as a prefix of it (`--no`, `--rec`).
pub(super) fn long_matches(given: &str, long: &str) -> bool {
    given == long || (given.len() >= 3 && given.starts_with("--") && long.starts_with(given))
}

/// The long option of `known` that `t` (maybe abbreviated) names, or `t`;
/// an exact name wins over one it abbreviates.
pub(super) fn canonical_long<'a>(t: &'a str, known: &[&'a str]) -> &'a str {
    let name = t.split_once('=').map_or(t, |(n, _)| n);
    let exact = known.iter().find(|k| **k == name);
    let abbreviates = |k: &&&str| k.starts_with("--") && long_matches(name, k);
    let prefix = || known.iter().find(abbreviates);
    exact.or_else(prefix).copied().unwrap_or(name)
}

fn literal_arg(value: &str, from: &Arg) -> Arg {
    Arg {
        raw: from.raw.clone(),
        ..Arg::literal(value)
    }
}

impl Walker {
    /// Notes `risk` for `cmd`, why after the command as written.
    pub(super) fn say(&mut self, risk: Risk, cmd: &Cmd<'_>, why: &str) {
        self.note(risk, format!("`{}` {why}", cmd.shown));
    }

    /// Marks `cmd` unclassifiable, why after the command as written.
    pub(super) fn cannot(&mut self, cmd: &Cmd<'_>, why: &str) {
        self.unclassifiable(format!("`{}` {why}", cmd.shown));
    }
}
