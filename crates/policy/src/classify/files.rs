//! File-changing commands: rm, cp/mv/install/ln, touch/mkdir/tee, chmod/chown,
//! dd, shred, find (-delete/-exec), tar and archivers.

use super::commands::{Cmd, Opts};
use super::rules;
use super::walk::Walker;
use super::words::Arg;
use crate::model::Risk;

impl Walker {
    /// A program judged by its `[[options]]` entry alone (see [`rules::Program`]).
    pub(super) fn program(&mut self, p: &rules::Program, cmd: &Cmd<'_>) {
        if self.only_info(p, cmd) {
            return;
        }
        let opts = self.options(cmd, cmd.args);
        let what = format!("`{}`", cmd.shown);
        if self.when_rows(p, &opts, &what) {
            return;
        }
        let out = p
            .output_at
            .and_then(|i| opts.pos.get(i.saturating_sub(1)).cloned());
        if let Some(out) = out.or_else(|| p.output_missing.as_deref().map(Arg::literal)) {
            self.write_to(&out, &what);
        }
        let operands = self.operands(p, &opts, &what);
        if let Some(v) = p.operand.as_ref().filter(|_| !operands.is_empty()) {
            self.judge(v.risk, format!("{what} {}", v.why));
        }
        let dir_given = p.dir_with.iter().next().is_none() || given(&opts, &p.dir_with);
        if p.dir.iter().next().is_some() && dir_given {
            let dir = opts.value_of(&p.dir.strs());
            self.write_to(&dir.unwrap_or_else(|| Arg::literal(".")), &what);
        }
        if let Some(e) = p.empty.as_ref().filter(|_| operands.is_empty()) {
            self.judge(e.risk, format!("{what} {}", e.why));
        }
        if let Some(risk) = p.risk {
            self.judge(risk, format!("{what} {}", p.why));
        }
    }

    /// Notes the `when` rows of `p` whose flags are given; true when a safe
    /// one ends the judging.
    pub(super) fn when_rows(&mut self, p: &rules::Program, opts: &Opts, what: &str) -> bool {
        for row in p.when.iter().filter(|r| given(opts, &r.with)) {
            self.judge(row.risk, format!("{what} {}", row.why));
            if row.risk == rules::Outcome::Safe {
                return true;
            }
        }
        false
    }

    /// Whether every argument of `cmd` is one of `p`'s `info` flags (noted safe).
    pub(super) fn only_info(&mut self, p: &rules::Program, cmd: &Cmd<'_>) -> bool {
        let info = p.info.all_of(cmd.args.iter().map(Arg::lit));
        if info {
            self.say(Risk::Safe, cmd, "only prints its version or help");
        }
        info
    }

    /// Acts on the operands of `p` (see [`rules::Program`]); returns them.
    pub(super) fn operands(&mut self, p: &rules::Program, opts: &Opts, what: &str) -> Vec<Arg> {
        let skip = (!given(opts, &p.skip_unless)).then_some(p.skip);
        let skip = skip.unwrap_or(0);
        let mut operands = Vec::new();
        for a in opts.pos.get(skip..).unwrap_or(&[]) {
            let text = a.lit();
            if text.is_some_and(|t| p.not_operands.prefixes(t)) {
                continue;
            }
            match (p.operand_prefix.as_deref(), text) {
                (None, _) => operands.push(a.clone()),
                // `of=~/x`: bash expands the `~` after `=` too.
                (Some(pre), Some(t)) if t.starts_with(pre) => match a.raw.strip_prefix(pre) {
                    Some(raw) => operands.push(self.word(raw)),
                    None => operands.push(Arg::literal(&t[pre.len()..])),
                },
                (Some(_), Some(_)) => {}
                (Some(_), None) => operands.push(Arg::unknown(&a.raw)),
            }
        }
        let recursive = given(opts, &p.recursive);
        if let Some(act) = p.operands.as_deref()
            && (p.operands_with.iter().next().is_none() || given(opts, &p.operands_with))
        {
            for o in &operands {
                self.act(act, o, recursive, what);
            }
        }
        operands
    }

    pub(super) fn copy(&mut self, cmd: &Cmd<'_>) {
        let opts = self.options(cmd, cmd.args);
        let what = format!("`{}`", cmd.shown);
        let remote = matches!(cmd.name, "scp" | "rsync");
        if remote {
            self.network(format!("{what} transfers files over the network"));
        }
        if cmd.name == "install" && opts.has('d', &["--directory"]) {
            return opts.pos.iter().for_each(|d| self.write_to(d, &what));
        }
        let target_dir = opts.value_of(&["-t", "--target-directory"]);
        let (sources, dest) = match (target_dir, opts.pos.split_last()) {
            (Some(t), _) => (opts.pos.as_slice(), Some(t)),
            (None, Some((last, rest))) => (rest, Some(last.clone())),
            (None, None) => (opts.pos.as_slice(), None),
        };
        let host = |t: &str| !t.starts_with('/') && t.contains(':');
        let is_remote = |a: &Arg| remote && a.lit().is_some_and(host);
        let deletes = remote && opts.flags.iter().any(|f| f.starts_with("--del"));
        // A link in the step's own folder is no longer only the folder: a
        // later write through it lands where it points.
        let symlink = opts.has('s', &["--symbolic-link"]) || opts.has('l', &["--link"]);
        let links = cmd.name == "ln" || cmd.name == "cp" && symlink;
        match dest {
            Some(d) if !is_remote(&d) => {
                self.write_to(&d, &what);
                if let (true, Some(v)) = (links, self.target(&d).scratch) {
                    let (folder, then) = (v.describe(), "writes through it land where it points");
                    let why = format!("{what} makes a link in {folder}: {then}");
                    self.note(Risk::Moderate, why);
                }
                if deletes {
                    self.act("delete", &d, true, &what);
                }
            }
            Some(_) => {}
            None => self.say(Risk::Moderate, cmd, "copies files"),
        }
        let moves = cmd.name == "mv" || opts.flags.iter().any(|f| f == "--remove-source-files");
        for s in sources.iter().filter(|s| moves && !is_remote(s)) {
            // Moving a tree away removes it from where it was.
            self.act("delete", s, true, &what);
        }
    }

    pub(super) fn tar(&mut self, cmd: &Cmd<'_>) {
        let mut args = cmd.args.to_vec();
        if let Some(first) = args.first_mut()
            && let Some(t) = first.lit()
            && !t.is_empty()
            && t.chars().all(|c| c.is_ascii_alphabetic())
        {
            first.text = Some(format!("-{t}"));
        }
        let opts = self.options(cmd, &args);
        let what = format!("`{}`", cmd.shown);
        for action in opts.values_of(&["--checkpoint-action"]) {
            match action.lit() {
                Some(a) if a.starts_with("exec=") => {
                    let code = Arg::literal(a.trim_start_matches("exec="));
                    self.code_string(&code, &cmd.shown);
                }
                Some(_) => {}
                None => self.cannot(cmd, "has a checkpoint action only known at run time"),
            }
        }
        let archive = opts.value_of(&["-f", "--file"]);
        let host = |f: &str| f.split('/').next().is_some_and(|head| head.contains(':'));
        let local = opts.has('\0', &["--force-local"]);
        let remote = !local && archive.as_ref().and_then(Arg::lit).is_some_and(host);
        if remote {
            self.network(format!("{what} reads or writes a remote archive"));
        }
        let words = |k| rules::raw().list("words", k);
        let extract = given(&opts, words("tar-extracts"));
        let writes_archive = given(&opts, words("tar-writes"));
        if extract && opts.has('O', &["--to-stdout"]) {
            self.say(Risk::Safe, cmd, "extracts to standard output");
        } else if extract {
            let dir = opts.value_of(&["-C", "--directory"]);
            self.write_to(&dir.unwrap_or_else(|| Arg::literal(".")), &what);
            if opts.has('P', &["--absolute-names"]) {
                let why = "extracts members with absolute paths, anywhere on the system";
                self.say(Risk::Dangerous, cmd, why);
            }
        }
        if writes_archive {
            match archive.filter(|a| !a.is("-") && !remote) {
                Some(a) => self.write_to(&a, &what),
                None => self.say(Risk::Moderate, cmd, "writes an archive"),
            }
            let removes = opts.has('\0', &["--remove-files"]);
            for p in opts.pos.iter().filter(|_| removes) {
                self.act("delete", p, true, &what);
            }
        }
        if !extract && !writes_archive {
            self.say(Risk::Safe, cmd, "only lists or compares an archive");
        }
    }

    pub(super) fn find(&mut self, cmd: &Cmd<'_>) {
        let what = format!("`{}`", cmd.shown);
        // find's own options come before the starting points: `-H`, `-L`,
        // `-P`, `-D DEBUGOPTS`, `-OLEVEL` (and `--`).
        let mut lead = 0;
        while let Some(t) = cmd.args.get(lead).and_then(Arg::lit) {
            match t {
                "-H" | "-L" | "-P" => lead += 1,
                "-D" => lead += 2,
                "--" => {
                    lead += 1;
                    break;
                }
                _ if t.starts_with("-O") || t.starts_with("-D") => lead += 1,
                _ => break,
            }
        }
        let start = |t: &str| !t.starts_with('-') && t != "(" && t != "!";
        let starts = cmd.args.iter().skip(lead);
        let found = found_arg(starts.take_while(|a| a.lit().is_none_or(start)));
        let mut acted = false;
        let mut i = 0;
        while let Some(arg) = cmd.args.get(i) {
            i += 1;
            match arg.lit() {
                Some("-delete") => {
                    acted = true;
                    // -delete empties whole trees when no test narrows what is found.
                    let tests = rules::raw().list("words", "find-tests");
                    let mut lits = cmd.args.iter().filter_map(Arg::lit);
                    let narrowed = lits.any(|t| tests.has(t));
                    self.act("delete", &found, !narrowed, &what);
                }
                Some("-exec" | "-execdir" | "-ok" | "-okdir") => {
                    acted = true;
                    let rest = cmd.args.get(i..).unwrap_or(&[]);
                    let end = rest.iter().position(|a| a.is(";") || a.is("+"));
                    let end = end.unwrap_or(rest.len());
                    let inner: Vec<Arg> = (rest.iter().take(end))
                        .map(|a| if a.is("{}") { &found } else { a }.clone())
                        .collect();
                    self.run(&inner, &super::walk::Input::Terminal);
                    i += end + 1;
                }
                Some(t) if t.starts_with("-fprint") || t == "-fls" => {
                    acted = true;
                    if let Some(f) = cmd.args.get(i) {
                        self.write_to(f, &what);
                    }
                }
                _ => {}
            }
        }
        if !acted {
            self.say(Risk::Safe, cmd, "only searches");
        }
    }
}

/// The path a `{}` of find stands for: some entry below the start points.
fn found_arg<'a>(mut starts: impl Iterator<Item = &'a Arg>) -> Arg {
    let start = match (starts.next(), starts.next()) {
        (None, _) => Some("."),
        (Some(one), None) => one.lit(),
        _ => None,
    };
    let Some(s) = start else {
        return Arg::unknown("{}");
    };
    let text = format!("{}/*", s.trim_end_matches('/'));
    Arg {
        glob_at: text.rfind('*'),
        raw: "{}".into(),
        ..Arg::literal(&text)
    }
}

/// Whether one of the flags `names` is given: `-x` also in a cluster of
/// short flags, a long one also abbreviated, any other as written.
pub(super) fn given(opts: &Opts, names: &rules::Names) -> bool {
    names.iter().any(|n| {
        let mut short = n.strip_prefix('-').unwrap_or_default().chars();
        match (short.next(), short.next()) {
            (Some(c), None) => opts.has(c, &[]),
            _ if n.starts_with("--") => opts.has('\0', &[n]),
            _ => opts.flags.iter().any(|f| f == n),
        }
    })
}
