//! File-changing commands: rm, cp/mv/install/ln, touch/mkdir/tee, chmod/chown,
//! dd, shred, find (-delete/-exec), tar and archivers.

use super::commands::{Cmd, parse_opts};
use super::paths::Loc;
use super::walk::Walker;
use super::words::Arg;
use crate::model::Risk;

impl Walker {
    pub(crate) fn file_command(&mut self, cmd: &Cmd<'_>) -> bool {
        match cmd.name {
            "rm" => self.rm(cmd),
            "rmdir" | "unlink" => self.each_positional(cmd, &[], Self::delete_one),
            "cp" | "mv" | "install" | "ln" | "scp" | "rsync" => self.copy(cmd),
            "touch" | "mkdir" | "truncate" | "tee" | "mkfifo" | "mknod" => self.touch(cmd),
            "chmod" | "chown" | "chgrp" => self.chmod(cmd),
            "dd" => self.dd(cmd),
            "shred" => self.shred(cmd),
            "tar" => self.tar(cmd),
            "unzip" | "gunzip" | "gzip" | "bunzip2" | "bzip2" | "xz" | "unxz" | "zip" | "7z"
            | "patch" => self.note(
                Risk::Moderate,
                format!("`{}` writes files (archive or patch)", cmd.shown),
            ),
            _ => return false,
        }
        true
    }

    fn each_positional(
        &mut self,
        cmd: &Cmd<'_>,
        with_value: &[&str],
        f: fn(&mut Self, &Arg, &str),
    ) {
        let opts = parse_opts(cmd.args, with_value);
        let what = format!("`{}`", cmd.shown);
        for p in &opts.pos {
            f(self, p, &what);
        }
        if opts.pos.is_empty() {
            self.note(Risk::Moderate, format!("{what} changes files"));
        }
    }

    fn delete_one(&mut self, arg: &Arg, what: &str) {
        self.delete(arg, false, what);
    }

    fn write_one(&mut self, arg: &Arg, what: &str) {
        self.write_to(arg, what);
    }

    fn rm(&mut self, cmd: &Cmd<'_>) {
        let opts = parse_opts(cmd.args, &[]);
        let what = format!("`{}`", cmd.shown);
        if opts.flags.iter().any(|f| f == "--no-preserve-root") {
            self.block(format!("{what} uses --no-preserve-root"));
            return;
        }
        let recursive = opts.has('r', &["--recursive"]) || opts.has('R', &[]);
        for p in &opts.pos {
            self.delete(p, recursive, &what);
        }
        if opts.pos.is_empty() {
            self.note(Risk::Moderate, format!("{what} deletes files"));
        }
    }

    fn copy(&mut self, cmd: &Cmd<'_>) {
        let with_value = [
            "-t",
            "--target-directory",
            "-S",
            "--suffix",
            "-m",
            "--mode",
            "-o",
            "--owner",
            "-g",
            "--group",
            "-e",
            "--rsh",
            "-i",
            "-P",
            "-F",
            "-l",
            "-c",
            "-J",
            "--exclude",
            "--include",
            "--filter",
            "-f",
        ];
        let opts = parse_opts(cmd.args, &with_value);
        let what = format!("`{}`", cmd.shown);
        let remote = matches!(cmd.name, "scp" | "rsync");
        if remote {
            self.note(
                Risk::Moderate,
                format!("{what} transfers files over the network"),
            );
        }
        let target_dir = opts.value_of(&["-t", "--target-directory"]);
        let (sources, dest) = match (&target_dir, opts.pos.split_last()) {
            (Some(t), _) => (opts.pos.as_slice(), Some(t.clone())),
            (None, Some((last, rest))) => (rest, Some(last.clone())),
            (None, None) => (opts.pos.as_slice(), None),
        };
        let is_remote = |a: &Arg| {
            remote
                && a.lit()
                    .is_some_and(|t| !t.starts_with('/') && t.contains(':'))
        };
        match dest {
            Some(d) if !is_remote(&d) => self.write_to(&d, &what),
            Some(_) => {}
            None => self.note(Risk::Moderate, format!("{what} copies files")),
        }
        let moves = cmd.name == "mv" || opts.flags.iter().any(|f| f == "--remove-source-files");
        for s in sources.iter().filter(|s| moves && !is_remote(s)) {
            self.write_to(s, &what);
        }
    }

    fn touch(&mut self, cmd: &Cmd<'_>) {
        let with_value = [
            "-m",
            "--mode",
            "-s",
            "--size",
            "-d",
            "--date",
            "-r",
            "--reference",
            "-t",
        ];
        let what = format!("`{}`", cmd.shown);
        let opts = parse_opts(cmd.args, &with_value);
        for p in &opts.pos {
            self.write_one(p, &what);
        }
        if opts.pos.is_empty() {
            let risk = if cmd.name == "tee" {
                Risk::Safe
            } else {
                Risk::Moderate
            };
            self.note(risk, format!("{what} writes no named file"));
        }
    }

    fn chmod(&mut self, cmd: &Cmd<'_>) {
        let opts = parse_opts(cmd.args, &["--reference", "--from"]);
        let what = format!("`{}`", cmd.shown);
        let recursive = opts.has('R', &["--recursive"]);
        let skip = usize::from(opts.value_of(&["--reference"]).is_none());
        let mut any = false;
        for p in opts.pos.iter().skip(skip) {
            any = true;
            self.change_mode(p, recursive, &what);
        }
        if !any {
            self.note(Risk::Moderate, format!("{what} changes permissions"));
        }
    }

    fn dd(&mut self, cmd: &Cmd<'_>) {
        let what = format!("`{}`", cmd.shown);
        let output = cmd.args.iter().find_map(|a| match a.lit() {
            Some(t) => t.strip_prefix("of=").map(|v| Arg {
                text: Some(v.to_string()),
                glob_at: None,
                raw: v.to_string(),
                procsub: false,
            }),
            None => Some(Arg::unknown(&a.raw)),
        });
        let Some(out) = output else {
            self.note(
                Risk::Moderate,
                format!("{what} copies raw data to standard output"),
            );
            return;
        };
        let t = self.target(&out);
        match t.loc {
            Loc::DevDisk | Loc::DevOther | Loc::Protected => {
                self.block(format!(
                    "{what} overwrites device or system file {}",
                    t.shown
                ));
            }
            Loc::DevSink => self.note(Risk::Moderate, format!("{what} copies raw data")),
            Loc::Inside | Loc::WsRoot => {
                self.note(
                    Risk::Moderate,
                    format!("{what} writes inside the workspace"),
                );
            }
            _ => self.note(
                Risk::Dangerous,
                format!("{what} overwrites {} outside the workspace", t.shown),
            ),
        }
    }

    fn shred(&mut self, cmd: &Cmd<'_>) {
        let opts = parse_opts(
            cmd.args,
            &["-n", "--iterations", "-s", "--size", "--random-source"],
        );
        let what = format!("`{}`", cmd.shown);
        for p in &opts.pos {
            let t = self.target(p);
            if matches!(t.loc, Loc::DevDisk | Loc::DevOther) {
                self.block(format!("{what} destroys device {}", t.shown));
            } else {
                self.delete(p, false, &what);
            }
        }
        self.note(Risk::Moderate, format!("{what} destroys file contents"));
    }

    fn tar(&mut self, cmd: &Cmd<'_>) {
        let opts = parse_opts(cmd.args, &["-C", "--directory", "-f", "--file", "-T", "-X"]);
        let what = format!("`{}`", cmd.shown);
        let mode = cmd.args.first().and_then(Arg::lit).unwrap_or("");
        let listing = (opts.has('t', &["--list"])
            || (!mode.starts_with('-') && mode.contains('t')))
            && !opts.has('x', &["--extract"])
            && !mode.contains('x');
        if listing {
            self.note(Risk::Safe, format!("{what} only lists an archive"));
            return;
        }
        if let Some(dir) = opts.value_of(&["-C", "--directory"]) {
            self.write_to(&dir, &what);
        }
        self.note(Risk::Moderate, format!("{what} writes files (archive)"));
    }

    pub(crate) fn find(&mut self, cmd: &Cmd<'_>) {
        let what = format!("`{}`", cmd.shown);
        let starts: Vec<Arg> = cmd
            .args
            .iter()
            .take_while(|a| {
                a.lit()
                    .is_none_or(|t| !t.starts_with('-') && t != "(" && t != "!")
            })
            .cloned()
            .collect();
        let found = self.found_arg(&starts);
        let mut acted = false;
        let mut i = 0;
        while let Some(arg) = cmd.args.get(i) {
            i += 1;
            match arg.lit() {
                Some("-delete") => {
                    acted = true;
                    self.delete(&found, false, &what);
                }
                Some(t @ ("-exec" | "-execdir" | "-ok" | "-okdir")) => {
                    acted = true;
                    let end = cmd
                        .args
                        .get(i..)
                        .unwrap_or(&[])
                        .iter()
                        .position(|a| a.is(";") || a.is("+"))
                        .map_or(cmd.args.len(), |p| i + p);
                    let inner =
                        self.substitute_found(cmd.args.get(i..end).unwrap_or(&[]), &found, t);
                    self.run(&inner, &super::walk::Input::Terminal);
                    i = end + 1;
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
            self.note(Risk::Safe, format!("{what} only searches"));
        }
    }

    /// The path a `{}` of find stands for: some entry below the start points.
    fn found_arg(&self, starts: &[Arg]) -> Arg {
        let start = match starts {
            [] => Some(".".to_string()),
            [one] => one.lit().map(str::to_string),
            _ => None,
        };
        match start {
            Some(s) => {
                let text = format!("{}/*", s.trim_end_matches('/'));
                let text = if text == "/*" || s.is_empty() {
                    "/*".to_string()
                } else {
                    text
                };
                let glob_at = text.rfind('*');
                Arg {
                    text: Some(text),
                    glob_at,
                    raw: "{}".to_string(),
                    procsub: false,
                }
            }
            None => Arg::unknown("{}"),
        }
    }

    fn substitute_found(&self, args: &[Arg], found: &Arg, _how: &str) -> Vec<Arg> {
        args.iter()
            .map(|a| if a.is("{}") { found.clone() } else { a.clone() })
            .collect()
    }
}
