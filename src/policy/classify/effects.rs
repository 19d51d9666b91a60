//! What writing to, deleting or re-permissioning a path costs, by where it is.

use super::paths::{Loc, Target};
use super::walk::Walker;
use super::words::Arg;
use crate::model::Risk;

impl Walker {
    /// Resolves an argument against the current directory.
    pub(crate) fn target(&self, arg: &Arg) -> Target {
        self.places.resolve(arg, self.cwd.as_deref())
    }

    /// A write (create, overwrite, append, move away) to `arg`.
    pub(crate) fn write_to(&mut self, arg: &Arg, what: &str) {
        // The step's output and requests files, which plangate made for it (an
        // assignment to either variable makes the command unclassifiable: `vars.rs`).
        for (var, words) in [
            ("PLANGATE_OUTPUT", "outputs"),
            ("PLANGATE_REQUESTS", "publish requests"),
        ] {
            let raw = arg.raw.as_str();
            let bare = raw
                .strip_prefix('"')
                .and_then(|r| r.strip_suffix('"'))
                .unwrap_or(raw);
            if bare == format!("${var}") || bare == format!("${{{var}}}") {
                self.note(Risk::Safe, format!("{what} writes the step's {words}"));
                return;
            }
        }
        let t = self.target(arg);
        let loc = effective(&t);
        let p = &t.shown;
        match loc {
            Loc::DevSink => self.note(Risk::Safe, format!("{what} writes only to {p}")),
            Loc::Scratch(v) => self.note(
                Risk::Safe,
                format!("{what} writes only into {}", v.describe()),
            ),
            Loc::DevDisk | Loc::Protected => {
                self.block(format!("{what} writes to {p}, a protected system location"));
            }
            Loc::System | Loc::DevOther | Loc::FsRoot => {
                self.note(Risk::Dangerous, format!("{what} writes to system path {p}"));
            }
            Loc::DevNet => self.note(Risk::Moderate, format!("{what} opens a network connection")),
            Loc::Inside | Loc::WsRoot => {
                self.note(
                    Risk::Moderate,
                    format!("{what} writes inside the workspace"),
                );
            }
            Loc::Unknown => self.note(
                Risk::Moderate,
                format!("{what} writes to `{p}`, a path only known at run time"),
            ),
            Loc::Tmp | Loc::Home | Loc::Outside | Loc::WsAncestor => self.note(
                Risk::Moderate,
                format!("{what} writes to {p}, outside the workspace"),
            ),
        }
    }

    /// Deletes `arg`, recursively or not.
    pub(crate) fn delete(&mut self, arg: &Arg, recursive: bool, what: &str) {
        let t = self.target(arg);
        if recursive {
            self.delete_tree(&t, what);
        } else {
            self.delete_file(&t, what);
        }
    }

    fn delete_tree(&mut self, t: &Target, what: &str) {
        let p = &t.shown;
        if t.under {
            return self.delete_glob(t, what);
        }
        match t.loc {
            Loc::Scratch(v) => self.note(
                Risk::Safe,
                format!("{what} deletes only inside {}", v.describe()),
            ),
            Loc::FsRoot | Loc::WsRoot | Loc::WsAncestor | Loc::Home => self.block(format!(
                "{what} deletes {p} recursively: the root, home or workspace itself"
            )),
            Loc::Protected | Loc::DevDisk => {
                self.block(format!("{what} deletes protected system path {p}"));
            }
            Loc::System if std::path::Path::new(p).components().count() == 2 => {
                self.block(format!("{what} deletes system directory {p}"));
            }
            Loc::Inside => self.note(
                Risk::Moderate,
                format!("{what} deletes recursively inside the workspace"),
            ),
            Loc::Unknown => self.note(
                Risk::Dangerous,
                format!("{what} deletes recursively a path only known at run time"),
            ),
            _ => self.note(
                Risk::Dangerous,
                format!("{what} deletes {p} recursively, outside the workspace"),
            ),
        }
    }

    fn delete_glob(&mut self, t: &Target, what: &str) {
        let p = &t.shown;
        match t.loc {
            Loc::Scratch(v) => self.note(
                Risk::Safe,
                format!("{what} deletes only inside {}", v.describe()),
            ),
            Loc::Inside | Loc::WsRoot => self.note(
                Risk::Moderate,
                format!("{what} deletes recursively inside the workspace"),
            ),
            Loc::FsRoot | Loc::Home | Loc::WsAncestor if t.covers_all => self.block(format!(
                "{what} deletes everything in {p}: the root, home or the workspace's parent"
            )),
            Loc::Protected | Loc::DevDisk => {
                self.block(format!("{what} deletes protected system path {p}"));
            }
            _ => self.note(
                Risk::Dangerous,
                format!("{what} deletes {p} recursively, outside the workspace"),
            ),
        }
    }

    fn delete_file(&mut self, t: &Target, what: &str) {
        let p = &t.shown;
        let loc = if t.under && matches!(t.loc, Loc::WsRoot) {
            Loc::Inside
        } else {
            t.loc
        };
        match loc {
            Loc::Scratch(v) => self.note(
                Risk::Safe,
                format!("{what} deletes only inside {}", v.describe()),
            ),
            Loc::Protected | Loc::DevDisk => {
                self.block(format!("{what} deletes protected system path {p}"));
            }
            Loc::Inside | Loc::WsRoot => {
                self.note(
                    Risk::Moderate,
                    format!("{what} deletes inside the workspace"),
                );
            }
            Loc::Unknown => self.note(
                Risk::Moderate,
                format!("{what} deletes `{p}`, a path only known at run time"),
            ),
            Loc::Tmp | Loc::Outside if !t.under => self.note(
                Risk::Moderate,
                format!("{what} deletes {p}, outside the workspace"),
            ),
            _ => self.note(
                Risk::Dangerous,
                format!("{what} deletes {p}, outside the workspace"),
            ),
        }
    }

    /// chmod/chown/chgrp on `arg`.
    pub(crate) fn change_mode(&mut self, arg: &Arg, recursive: bool, what: &str) {
        let t = self.target(arg);
        let p = &t.shown;
        let loc = effective(&t);
        let whole_root = t.under && t.covers_all && t.loc == Loc::FsRoot;
        match loc {
            Loc::Scratch(v) => self.note(
                Risk::Safe,
                format!("{what} changes permissions only inside {}", v.describe()),
            ),
            _ if recursive && whole_root => {
                self.block(format!(
                    "{what} changes permissions of the whole filesystem"
                ));
            }
            Loc::FsRoot if recursive => {
                self.block(format!(
                    "{what} changes permissions of the whole filesystem"
                ));
            }
            Loc::Protected | Loc::DevDisk => {
                self.block(format!("{what} changes permissions of protected path {p}"));
            }
            Loc::Inside | Loc::WsRoot => self.note(
                Risk::Moderate,
                format!("{what} changes permissions inside the workspace"),
            ),
            _ if recursive => self.note(
                Risk::Dangerous,
                format!("{what} changes permissions recursively outside the workspace ({p})"),
            ),
            Loc::System | Loc::FsRoot | Loc::DevOther | Loc::Home => self.note(
                Risk::Dangerous,
                format!("{what} changes permissions of system path {p}"),
            ),
            _ => self.note(
                Risk::Moderate,
                format!("{what} changes permissions outside the workspace ({p})"),
            ),
        }
    }
}

/// The place a target stands for: a glob below the workspace root is inside it,
/// a glob below `/` may reach anything (treated as a system path).
fn effective(t: &Target) -> Loc {
    match (t.under, t.loc) {
        (true, Loc::WsRoot) => Loc::Inside,
        (true, Loc::FsRoot) => Loc::System,
        (true, Loc::WsAncestor | Loc::Home) => Loc::Outside,
        (_, loc) => loc,
    }
}
