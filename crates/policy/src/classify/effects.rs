//! What writing to, deleting or re-permissioning a path costs, by where it is.

use super::paths::{Loc, Target};
use super::rules;
use super::walk::Walker;
use super::words::Arg;
use crate::model::Risk;

impl Walker {
    /// Resolves an argument against the current directory.
    pub(super) fn target(&self, arg: &Arg) -> Target {
        self.places.resolve(arg, self.cwd.as_deref())
    }

    /// Whether `arg` is one path inside the workspace or at `also`.
    pub(super) fn inside_or(&self, arg: &Arg, also: Loc) -> bool {
        let t = self.target(arg);
        !t.under && (matches!(t.loc, Loc::Inside | Loc::WsRoot) || t.loc == also)
    }

    /// A write (create, overwrite, append, move away) to `arg`.
    pub(super) fn write_to(&mut self, arg: &Arg, what: &str) {
        // The step's output and requests files, which plangate made for it (an
        // assignment to either variable makes the command unclassifiable: `vars.rs`).
        let raw = arg.raw.as_str();
        let bare = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"'));
        let bare = bare.unwrap_or(raw);
        let files = [("OUTPUT", "outputs"), ("REQUESTS", "publish requests")];
        for (var, words) in files.map(|(v, w)| (format!("PLANGATE_{v}"), w)) {
            if bare == format!("${var}") || bare == format!("${{{var}}}") {
                self.note(Risk::Safe, format!("{what} writes the step's {words}"));
                return;
            }
        }
        let t = self.target(arg);
        self.effect("write", &t, false, what);
    }

    /// The act `operands` of an `[[options]]` entry names, on `arg`: the
    /// `[[effects]]` table of that name; a recursive `delete` or `shred` is
    /// `delete-glob` (of a glob) or `delete-tree`, another `delete` `delete-file`.
    pub(super) fn act(&mut self, act: &str, arg: &Arg, recursive: bool, what: &str) {
        let t = self.target(arg);
        let act = match (act, recursive, t.under) {
            ("write", ..) => return self.write_to(arg, what),
            ("delete" | "shred", true, true) => "delete-glob",
            ("delete" | "shred", true, false) => "delete-tree",
            ("delete", false, _) => "delete-file",
            _ => act,
        };
        self.effect(act, &t, recursive, what);
    }

    /// Records an outcome of the rules file.
    pub(super) fn judge(&mut self, outcome: rules::Outcome, reason: String) {
        match outcome {
            rules::Outcome::Blocked => self.block(reason),
            rules::Outcome::Safe => self.note(Risk::Safe, reason),
            rules::Outcome::Moderate => self.note(Risk::Moderate, reason),
            rules::Outcome::Dangerous => self.note(Risk::Dangerous, reason),
            rules::Outcome::Unclassifiable => self.unclassifiable(reason),
        }
    }

    /// Applies the first row of the `[[effects]]` table of `act` that names
    /// the place of `t` (or `*`) and whose conditions all hold.
    fn effect(&mut self, act: &str, t: &Target, recursive: bool, what: &str) {
        let top = std::path::Path::new(&t.shown).components().count() == 2;
        let holds = |c: &rules::Condition| match c {
            rules::Condition::Glob => t.under,
            rules::Condition::NotGlob => !t.under,
            rules::Condition::CoversAll => t.covers_all,
            rules::Condition::TopLevel => top,
            rules::Condition::Recursive => recursive,
        };
        let places = |r: &&rules::EffectRow| r.at.contains(&t.loc) || r.at.contains(&Loc::Any);
        let tables = rules::raw().effects.iter().filter(|e| e.act == act);
        let row = tables
            .flat_map(|e| &e.rows)
            .find(|r| places(r) && r.when.iter().all(holds));
        let Some(r) = row else {
            let (file, loc) = (rules::FILE, t.loc);
            return self
                .unclassifiable(format!("{file}: no `[[effects]]` row for {act} at {loc:?}"));
        };
        let scratch = t.scratch.map(|v| v.describe()).unwrap_or_default();
        let why = r.why.replace("{p}", &t.shown);
        let why = why.replace("{scratch}", &scratch);
        self.judge(r.risk, format!("{what} {why}"));
    }
}
