//! Text run as code. Literal shell code (`bash -c '...'`, `eval`, a static
//! here-document or `echo ... | sh`) is parsed and judged; code known only at
//! run time (`bash -c "$X"`, `curl ... | sh`) and inline or piped code of
//! another interpreter (`python -c`: the classifier reads only bash) is
//! unclassifiable. A script file is moderate inside the workspace, else
//! unclassifiable.

use super::commands::{Cmd, Opts, leading};
use super::paths::Loc;
use super::rules::{self, Program};
use super::walk::{Input, Walker};
use super::words::Arg;
use crate::model::Risk;

const TERMINAL: &str = "reads code from a terminal (none in CI)";
const UNREAD_INPUT: &str = "runs code from its input, which the classifier cannot read";

/// Whether `args` start with `--`, and the words after it.
fn after_dashes(args: &[Arg]) -> (bool, &[Arg]) {
    match args.split_first() {
        Some((a, rest)) if a.is("--") => (true, rest),
        _ => (false, args),
    }
}

/// The startup files a shell runs before its script (`bash -l`, `sh -i`,
/// `zsh -c`, `fish -c`), when its options do not turn them off. Long options
/// are matched exactly: shells take no abbreviations, and a prefix that also
/// names another option must not count as the one that turns the files off.
fn startup_files(shell: &str, opts: &Opts, rcfile: bool) -> Option<&'static str> {
    let flag = |f: &str| opts.flags.iter().any(|g| g == f);
    let short = |c: char| opts.has(c, &[]);
    match shell {
        "zsh" if !short('f') && !flag("--no-rcs") => Some("its startup files (`~/.zshenv`)"),
        "fish" if !short('N') && !flag("--no-config") => Some("its startup files (`config.fish`)"),
        _ if (short('l') || flag("--login")) && !flag("--noprofile") => {
            Some("the login startup files (`/etc/profile`, `~/.profile`)")
        }
        _ if (short('i') || flag("--interactive")) && !flag("--norc") && !rcfile => {
            Some("the interactive startup files (`~/.bashrc`, `$ENV`)")
        }
        _ => None,
    }
}

impl Walker {
    /// `trap ACTION SIG`, `trap -- ACTION SIG`: the action runs as code.
    pub(super) fn trap(&mut self, cmd: &Cmd<'_>) {
        let (_, args) = after_dashes(cmd.args);
        let listing = |a: &Arg| a.lit().is_some_and(|t| t.starts_with('-') && t != "--");
        match args.first() {
            Some(action) if args.len() > 1 && !listing(action) => {
                self.code_string(action, &cmd.shown);
            }
            _ => self.say(Risk::Safe, cmd, "only lists or resets traps"),
        }
    }

    /// `source FILE`, `source -- FILE`; `source -p PATH FILE` (bash 5.3)
    /// searches PATH.
    pub(super) fn source(&mut self, cmd: &Cmd<'_>) {
        let why = "has options the classifier does not follow (`-p PATH` searches other folders)";
        match after_dashes(cmd.args) {
            (false, [a, ..]) if a.raw.starts_with('-') => self.cannot(cmd, why),
            (_, [file, ..]) => self.script_file(file, &cmd.shown),
            (_, []) => self.cannot(cmd, "sources no file"),
        }
    }

    /// Classifies a string that will run as shell code.
    pub(super) fn code_string(&mut self, code: &Arg, shown: &str) {
        match code.lit() {
            Some(text) => {
                self.note(Risk::Safe, format!("`{shown}` runs a literal script"));
                self.script(text);
            }
            None => self.unclassifiable(format!("`{shown}` runs code only known at run time")),
        }
    }

    /// A script file run or sourced: project code inside the workspace, else unreadable.
    pub(super) fn script_file(&mut self, file: &Arg, shown: &str) {
        if file.procsub {
            let why = "runs a script produced by another command";
            return self.unclassifiable(format!("`{shown}` {why}"));
        }
        // `deno run https://...`: code from the network.
        let remote = file.lit().is_some_and(|f| f.contains("://"));
        if !remote && self.inside_or(file, Loc::Inside) {
            let why = format!("`{shown}` runs a script file of the workspace");
            self.note(Risk::Moderate, why);
        } else {
            let (raw, not) = (&file.raw, "which is not a file of the workspace");
            self.unclassifiable(format!("`{shown}` runs script `{raw}`, {not}"));
        }
    }

    pub(super) fn shell(&mut self, cmd: &Cmd<'_>) {
        let with = rules::raw().list("shells", "with_value").strs();
        let opts = leading(cmd.args, &with);
        let rest = &opts.pos;
        let rc = opts.value_of(&["--rcfile", "--init-file"]);
        rc.iter().for_each(|rc| self.script_file(rc, &cmd.shown));
        if let Some(files) = startup_files(cmd.name, &opts, rc.is_some()) {
            let why = format!("first runs {files}, which are not files of the workspace");
            self.cannot(cmd, &why);
        }
        let code = opts.has('c', &[]);
        let from_stdin = opts.has('s', &[]) || rest.first().is_none_or(|a| a.is("-"));
        match rest.first() {
            Some(text) if code => self.code_string(text, &cmd.shown),
            None if code => self.cannot(cmd, "has -c without a script"),
            Some(file) if !from_stdin => self.script_file(file, &cmd.shown),
            _ => self.stdin_code(cmd, true),
        }
    }

    /// A shell or interpreter executing its standard input.
    fn stdin_code(&mut self, cmd: &Cmd<'_>, shell: bool) {
        match cmd.input {
            Input::Pipe(Some(text)) | Input::Text(Some(text)) if shell => {
                self.say(Risk::Safe, cmd, "runs literal shell code");
                self.script(text);
            }
            Input::File(file) => self.script_file(&file.clone(), &cmd.shown),
            Input::Terminal => self.say(Risk::Moderate, cmd, TERMINAL),
            _ => self.cannot(cmd, UNREAD_INPUT),
        }
    }

    pub(super) fn interpreter(&mut self, i: &Program, cmd: &Cmd<'_>) {
        if self.only_info(i, cmd) {
            return;
        }
        let opts = self.options_of(i, cmd, cmd.args);
        self.operands(i, &opts, &format!("`{}`", cmd.shown));
        let first = opts.pos.first().and_then(Arg::lit).unwrap_or_default();
        if opts.value_of(&i.code.strs()).is_some() || i.code_subcommands.has(first) {
            return self.unclassifiable(format!(
                "`{}` runs inline {} code, which the classifier cannot read",
                cmd.shown, cmd.name
            ));
        }
        if let Some(file) = opts.value_of(&i.file.strs()) {
            return self.script_file(&file, &cmd.shown);
        }
        if opts.value_of(&i.module.strs()).is_some() {
            return self.say(Risk::Moderate, cmd, "runs an installed or project module");
        }
        // `deno run FILE`: the script follows the subcommand (and its options).
        if i.run_subcommands.has(first) {
            let rest = leading(opts.pos.get(1..).unwrap_or_default(), &i.valued()).pos;
            return match rest.first() {
                Some(file) => self.script_file(file, &cmd.shown),
                None => self.cannot(cmd, "runs no named script"),
            };
        }
        match opts.pos.first() {
            Some(file) if !file.is("-") => self.script_file(file, &cmd.shown),
            _ => self.stdin_code(cmd, false),
        }
    }
}
