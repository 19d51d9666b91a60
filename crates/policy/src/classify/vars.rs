//! Assignments to variables that change what runs (`PATH`, `LD_PRELOAD`,
//! `GIT_SSH_COMMAND`, ...: the `[variables]` of the rules file), however made
//! (`VAR=x cmd`, `export`, `declare`, `read VAR`, `printf -v`, `for VAR in`).
//! Moderate when the classifier can follow the literal value (folders and
//! files of the workspace, a command line it judges, options that load no
//! code), dangerous otherwise; unclassifiable for variables that change how
//! the shell parses or runs (`SHELLOPTS`, `BASH_*`, `CDPATH`).

use super::paths::Loc;
use super::rules::{self, Names};
use super::walk::Walker;
use super::words::Arg;
use crate::model::Risk;

/// How a variable changes what runs: the lists of `[variables]`.
#[derive(Clone, Copy)]
enum Kind {
    SearchPath,
    Files,
    Command,
    /// Interpreter options, and those that load code.
    Options(&'static Names),
    GitKey,
    Plain,
    /// `shell` and `output-file`: unclassifiable, and why.
    Unreadable(&'static str),
}

/// How `name` changes what runs (the `[variables]` of the rules file), if it does.
fn kind_of(name: &str) -> Option<Kind> {
    let v = &rules::raw().variables;
    let mut all = vec![
        (&v.search_path, Kind::SearchPath),
        (&v.files, Kind::Files),
        (&v.command, Kind::Command),
        (&v.plain, Kind::Plain),
        (&v.shell, Kind::Unreadable(SHELL)),
        (&v.output_file, Kind::Unreadable(OUTPUT)),
        (&v.git_key, Kind::GitKey),
    ];
    all.extend(
        v.options
            .iter()
            .map(|o| (&o.names, Kind::Options(&o.loads))),
    );
    // An exact name wins over a pattern (`BASH_ENV` over `BASH_*`).
    let exact = all.iter().find(|(n, _)| n.has(name));
    let found = exact.or_else(|| all.iter().find(|(n, _)| n.pattern_matches(name)));
    found.map(|(_, k)| *k)
}

const SHELL: &str = "which changes how the shell parses or runs later commands";
const OUTPUT: &str = "which plangate reads: writes to $PLANGATE_OUTPUT and $PLANGATE_REQUESTS are safe only while they name the step's own files";

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
            Kind::Unreadable(why) => return self.unclassifiable(format!("{what}, {why}")),
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
            let arg = super::words::eval_word(part, self.home.as_deref()).arg;
            self.inside_or(&arg, Loc::System)
        })
    }

    /// Every file (`:`/space separated) is inside the workspace or /dev/null.
    fn file_list(&self, value: &Arg) -> bool {
        let Some(v) = value.lit() else {
            return false;
        };
        let mut files = v.split([':', ' ']).filter(|p| !p.is_empty());
        files.all(|p| self.inside_or(&Arg::literal(p), Loc::DevSink))
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
    v.split([' ', '\x1f', ','])
        .any(|w| (loads.iter()).any(|l| w.starts_with(l) || w.contains(&format!("{l}="))))
}
