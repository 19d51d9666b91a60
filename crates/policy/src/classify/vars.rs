//! Assignments to variables that change what runs: `PATH`, `LD_PRELOAD`,
//! `GIT_SSH_COMMAND`, `PAGER`, `NODE_OPTIONS`, `BASH_ENV`, ... however they are
//! made (`VAR=x cmd`, `VAR=x`, `export`, `declare -x`, `local`, `readonly`,
//! `env VAR=x`, `sudo VAR=x`, `read VAR`, `printf -v VAR`, `for VAR in`).
//!
//! One rule: such an assignment is at least moderate; it is moderate when
//! its value is a literal the classifier can follow (directories inside the
//! workspace or system directories, a file inside the workspace, a command
//! line that classifies, options that load no code), dangerous otherwise
//! (a value known only at run time, a path outside the workspace, options
//! that load code). Variables that change how the shell itself parses or
//! runs (`SHELLOPTS`, `BASHOPTS`, `CDPATH`, `BASH_*`, `GIT_CONFIG_PARAMETERS`)
//! make the command unclassifiable.

use super::paths::Loc;
use super::rules::{self, Names};
use super::walk::Walker;
use super::words::Arg;
use crate::model::Risk;

/// How a variable changes what runs.
#[derive(Clone, Copy)]
enum Kind {
    /// `:`-separated directories searched for programs, libraries or modules.
    SearchPath,
    /// Files or directories loaded, sourced or used as configuration.
    Files,
    /// A command line some program runs.
    Command,
    /// Options of an interpreter or compiler: dangerous when one of these loads code.
    Options(&'static Names),
    /// A git configuration key (`GIT_CONFIG_KEY_<n>`): judged by git's key table.
    GitKey,
    /// Only changes which of several known things runs: moderate.
    Plain,
    /// Changes how the shell parses or runs later commands: unclassifiable.
    Shell,
    /// `PLANGATE_OUTPUT`, `PLANGATE_REQUESTS`: a write to it is safe only while it is plangate's
    /// file: unclassifiable.
    OutputFile,
}

/// How `name` changes what runs (the `[variables]` of the rules file), if it does.
fn kind_of(name: &str) -> Option<Kind> {
    let v = &rules::raw().variables;
    let mut all = vec![
        (&v.search_path, Kind::SearchPath),
        (&v.files, Kind::Files),
        (&v.command, Kind::Command),
        (&v.plain, Kind::Plain),
        (&v.shell, Kind::Shell),
        (&v.output_file, Kind::OutputFile),
        (&v.git_key, Kind::GitKey),
    ];
    all.extend(
        v.options
            .iter()
            .map(|o| (&o.names, Kind::Options(&o.loads))),
    );
    // An exact name wins over a pattern (`BASH_ENV` over `BASH_*`).
    all.iter()
        .find(|(n, _)| n.has(name))
        .or_else(|| all.iter().find(|(n, _)| n.pattern_matches(name)))
        .map(|(_, k)| *k)
}

/// Builtins whose prefix `IFS=` only changes their own splitting.
const IFS_ONLY: &[&str] = &["read", "mapfile", "readarray"];

impl Walker {
    /// Judges an assignment of `value` to `name`; `prefix_of` names the command
    /// it is a prefix of (`VAR=x cmd`), if any.
    pub(super) fn assign_variable(
        &mut self,
        name: &str,
        value: &Arg,
        shown: &str,
        prefix_of: Option<&str>,
    ) {
        let Some(kind) = kind_of(name) else {
            return;
        };
        if name == "IFS" && prefix_of.is_some_and(|c| IFS_ONLY.contains(&c)) {
            return;
        }
        let what = format!("`{shown}` sets {name}");
        let followed = match kind {
            Kind::Shell => {
                let why = "which changes how the shell parses or runs later commands";
                return self.unclassifiable(format!("{what}, {why}"));
            }
            Kind::OutputFile => {
                let why = "writes to $PLANGATE_OUTPUT and $PLANGATE_REQUESTS are safe only while they name the step's own files";
                return self.unclassifiable(format!("{what}: {why}"));
            }
            Kind::Plain => true,
            Kind::GitKey => self.git_key(value, &what),
            Kind::SearchPath => self.search_path(value),
            Kind::Files => self.file_list(value),
            Kind::Command => self.command_value(value),
            Kind::Options(loads) => value.lit().is_some_and(|v| !loads_code(v, loads)),
        };
        let (risk, how) = if followed {
            (Risk::Moderate, ", which changes what runs")
        } else {
            (
                Risk::Dangerous,
                " to a value that can make later commands run code from outside the workspace or only known at run time",
            )
        };
        self.note(risk, format!("{what}{how}"));
    }

    /// A git key is followed; one that cannot be judged makes the command unclassifiable.
    fn git_key(&mut self, value: &Arg, what: &str) -> bool {
        let problem = match value.lit() {
            Some(key) => crate::git::config::judge_key(key).map(|why| format!("{what}: {why}")),
            None => Some(format!("{what} to a git key only known at run time")),
        };
        if let Some(why) = problem {
            self.unclassifiable(why);
        }
        true
    }

    /// Every directory is inside the workspace, a system directory or the old value (`$PATH`).
    fn search_path(&self, value: &Arg) -> bool {
        let raw = value.raw.trim_matches('"');
        raw.split(':').all(|part| {
            if part.is_empty() {
                return false;
            }
            if part.starts_with('$') {
                let own = part.trim_start_matches('$').trim_matches(['{', '}']);
                return kind_of(own).is_some() && !own.contains('$');
            }
            let t = self.target(&super::words::eval_word(part, self.home.as_deref()).arg);
            !t.under && matches!(t.loc, Loc::Inside | Loc::WsRoot | Loc::System)
        })
    }

    /// Every file (`:`/space separated) is inside the workspace or /dev/null.
    fn file_list(&self, value: &Arg) -> bool {
        let Some(v) = value.lit() else {
            return false;
        };
        v.split([':', ' ']).filter(|p| !p.is_empty()).all(|p| {
            let t = self.target(&Arg::literal(p));
            !t.under && matches!(t.loc, Loc::Inside | Loc::WsRoot | Loc::DevSink)
        })
    }

    /// A literal command line is classified as one (its risk counts too).
    fn command_value(&mut self, value: &Arg) -> bool {
        let Some(v) = value.lit() else {
            return false;
        };
        // LESSOPEN/LESSCLOSE: `|cmd %s`, `||cmd %s`, `-cmd`.
        let v = v.trim_start_matches(['|', '-']);
        self.subshell_script(&v.replace("%s", "FILE"));
        true
    }
}

/// Whether an option string holds one of `loads` (as a word, a prefix or `=`-joined).
fn loads_code(v: &str, loads: &Names) -> bool {
    v.split([' ', '\x1f', ',']).any(|w| {
        loads
            .strs()
            .iter()
            .any(|l| w.starts_with(l) || w.contains(&format!("{l}=")))
    })
}
