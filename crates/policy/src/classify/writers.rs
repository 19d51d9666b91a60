//! Programs that look read-only but write or run through some of their
//! arguments. Rule: such a program is safe only when none of its writing or
//! executing arguments is present; a written file is judged by where it is
//! (like a redirection), a program or command line it runs is judged as a
//! command (or is unclassifiable when it cannot be read), a script in a
//! language the classifier does not read (a sed or awk program only known at
//! run time, `sed -f`, `awk -f`) follows the script-file rule.

use super::commands::{Cmd, Opts, parse_opts};
use super::rules::{self, Program};
use super::walk::{Input, Walker};
use super::words::Arg;
use super::wrappers::fill_in;
use crate::model::Risk;

impl Walker {
    /// The options of `cmd` that take the next word, from the rules file;
    /// unclassifiable (fail-close) when the file has no table for it.
    pub(super) fn with_value(&mut self, cmd: &Cmd<'_>) -> Vec<&'static str> {
        let p = rules::raw().program(cmd.name);
        if p.is_none() {
            let file = rules::FILE;
            self.cannot(cmd, &format!("has no `[[options]]` entry in {file}"));
        }
        p.map(Program::valued).unwrap_or_default()
    }

    /// `args` (`cmd`'s, maybe rewritten) read with its `[[options]]` entry.
    pub(super) fn options(&mut self, cmd: &Cmd<'_>, args: &[Arg]) -> Opts {
        match rules::raw().program(cmd.name) {
            Some(p) => self.options_of(p, cmd, args),
            None => parse_opts(args, &self.with_value(cmd)),
        }
    }

    /// `args` read with the row `p`, and the effects of the options it
    /// names: a file written (`writes`, not `-`), a program run (`runs`), a
    /// file of options or commands (`config`, not `/dev/null`:
    /// unclassifiable), code loaded (`scripts`, `preload`), ...
    pub(super) fn options_of(&mut self, p: &Program, cmd: &Cmd<'_>, args: &[Arg]) -> Opts {
        let opts = parse_opts(args, &p.valued());
        let what = format!("`{}`", cmd.shown);
        for (n, v) in &opts.values {
            if p.writes.has(n) && !v.is("-") {
                self.write_to(v, &what);
            }
            if p.runs.has(n) {
                self.code_string(v, &cmd.shown);
            }
            if p.ssh_options.has(n) {
                self.ssh_option(v, &cmd.shown);
            }
            if p.templates.has(n) {
                self.output_template(v, &what);
            }
            if p.scripts.has(n) && v.is("-") {
                self.cannot(cmd, "reads code from standard input");
            } else if p.scripts.has(n) || p.preload.has(n) {
                self.script_file(v, &cmd.shown);
            }
            if p.config.has(n) && !v.is("/dev/null") {
                let why = "a file of options or commands (they can write anywhere or run programs)";
                self.unclassifiable(format!("{what} reads `{n}`, {why}"));
            }
        }
        opts
    }

    /// An output template (`curl -w`): `%output{FILE}` (or `%output{>>FILE}`)
    /// writes FILE; a template read from a file (`@FILE`) or only known at
    /// run time writes files named at run time.
    fn output_template(&mut self, v: &Arg, what: &str) {
        let Some(text) = v.lit().filter(|t| !t.starts_with('@')) else {
            let why = "writes files its output template names at run time";
            return self.note(Risk::Moderate, format!("{what} {why}"));
        };
        let mut rest = text;
        while let Some(at) = rest.find("%output{") {
            let after = rest.get(at + "%output{".len()..).unwrap_or_default();
            let end = after.find('}').unwrap_or(after.len());
            let file = after.get(..end).unwrap_or_default();
            self.write_to(&Arg::literal(file.trim_start_matches(">>")), what);
            rest = after.get(end..).unwrap_or_default();
        }
    }

    pub(super) fn sed(&mut self, cmd: &Cmd<'_>) {
        let opts = self.options(cmd, cmd.args);
        let what = format!("`{}`", cmd.shown);
        let mut scripts = opts.values_of(&["-e", "--expression"]);
        let files = opts.values_of(&["-f", "--file"]);
        let mut inputs = opts.pos.iter();
        if scripts.is_empty() && files.is_empty() {
            scripts.extend(inputs.next().cloned());
        }
        let sandbox = opts.has('\0', &["--sandbox"]);
        for f in &files {
            if f.is("-") {
                self.cannot(cmd, "reads its script from standard input");
            } else if !sandbox {
                self.script_file(f, &cmd.shown);
            }
        }
        for s in &scripts {
            match s.lit() {
                Some(text) if !sandbox => self.sed_script(text, &what),
                Some(_) => {}
                None => self.cannot(cmd, "runs a sed script only known at run time (sed can write files and run commands)"),
            }
        }
        let in_place = opts.has('i', &["--in-place"]);
        match inputs.as_slice() {
            _ if !in_place => self.say(Risk::Safe, cmd, "only prints"),
            [] => self.say(Risk::Moderate, cmd, "edits files in place"),
            files => files.iter().for_each(|f| self.write_to(f, &what)),
        }
    }

    /// Judges a sed script (GNU syntax) by what it does beyond printing.
    fn sed_script(&mut self, script: &str, what: &str) {
        let chars: Vec<char> = script.chars().collect();
        let mut i = 0;
        loop {
            i = skip_address(&chars, i);
            let Some(&c) = chars.get(i) else { break };
            i += 1;
            match c {
                _ if " \t\n;{}!=dDgGhHnNpPxzF".contains(c) => {}
                // A label, text or file: to the end of the line (some to a `;`).
                _ if "#:aicrRbtTvqQlL".contains(c) => {
                    i = rest_of_line(&chars, i, ":btTvqQlL".contains(c)).1;
                }
                'w' | 'W' | 'e' => {
                    let (arg, next) = rest_of_line(&chars, i, false);
                    self.sed_effect(c, &arg, what);
                    i = next;
                }
                's' | 'y' => {
                    let Some(&delim) = chars.get(i) else { break };
                    i = skip_part(&chars, i + 1, delim);
                    i = skip_part(&chars, i, delim);
                    if c == 's' {
                        i = self.sed_flags(&chars, i, what);
                    }
                }
                other => {
                    let why =
                        format!("uses sed command `{other}`, which the classifier does not know");
                    return self.unclassifiable(format!("{what} {why}"));
                }
            }
        }
    }

    /// Flags of an `s` command; `w FILE` and `e` are effects.
    fn sed_flags(&mut self, chars: &[char], mut i: usize, what: &str) -> usize {
        while let Some(&f) = chars.get(i) {
            match f {
                'w' => {
                    let (arg, next) = rest_of_line(chars, i + 1, false);
                    self.sed_effect(f, &arg, what);
                    return next;
                }
                'e' => self.sed_effect(f, "", what),
                'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => {}
                _ => return i,
            }
            i += 1;
        }
        i
    }

    /// sed's `w FILE` (`W`) writes FILE, `e COMMAND` runs it (without one,
    /// and `s///e`, the text sed built).
    fn sed_effect(&mut self, c: char, arg: &str, what: &str) {
        match c {
            'e' if arg.is_empty() => {
                let why = "runs text it builds as a shell command (sed `e`)";
                self.unclassifiable(format!("{what} {why}"));
            }
            'e' => self.code_string(&Arg::literal(arg), what.trim_matches('`')),
            _ => self.write_to(&Arg::literal(arg), what),
        }
    }

    pub(super) fn awk(&mut self, cmd: &Cmd<'_>) {
        let opts = self.options(cmd, cmd.args);
        let what = format!("`{}`", cmd.shown);
        if let Some(p) = rules::raw().program(cmd.name) {
            self.when_rows(p, &opts, &what);
        }
        // `-i`/`--include` adds a library (a script file: gawk looks in the
        // current folder first): the first operand is still the program;
        // gawk's `inplace` library rewrites every input file.
        let libs = opts.values_of(&["-i", "--include"]);
        let inplace = libs.iter().any(|v| v.is("inplace") || v.is("inplace.awk"));
        let sources = ["-f", "--file", "-E", "--exec", "-e", "--source"];
        let mut programs = opts.values_of(&["-e", "--source"]);
        let mut inputs = opts.pos.iter();
        if opts.value_of(&sources).is_none() {
            programs.extend(inputs.next().cloned());
        }
        if inplace {
            for input in inputs {
                self.write_to(input, &what);
            }
            self.say(Risk::Moderate, cmd, "rewrites its input files in place");
        }
        let sandbox = opts.has('S', &["--sandbox"]);
        for p in &programs {
            match p.lit() {
                Some(text) => self.awk_program(text, &what, sandbox),
                None => self.cannot(cmd, "runs an awk program only known at run time"),
            }
        }
        self.say(Risk::Safe, cmd, "only reads");
    }

    fn awk_program(&mut self, text: &str, what: &str, sandbox: bool) {
        let code = awk_code(text);
        if code.contains('@') {
            let why = "loads awk extensions or files (`@load`, `@include`)";
            self.unclassifiable(format!("{what} {why}"));
        }
        if sandbox {
            return;
        }
        let runs = code.contains("system(")
            || code.contains("system (")
            || code.replace("||", "").contains('|');
        if runs {
            self.unclassifiable(format!("{what} runs shell commands from awk (`system`, `|`), which the classifier cannot read"));
        }
        let why = format!("{what} writes files named at run time");
        match literal_target(text) {
            _ if !awk_redirects(&code) => {}
            Some(file) => self.write_to(&Arg::literal(&file), what),
            None => self.note(Risk::Moderate, why),
        }
    }

    /// less, more: safe readers unless they get commands (`+!cmd`) or write
    /// a log (the option roles of the file).
    pub(super) fn pager(&mut self, cmd: &Cmd<'_>) {
        self.options(cmd, cmd.args);
        let why = "starts with pager commands, which can run shell commands";
        if cmd.args.iter().any(|a| a.lit().is_none_or(pager_command)) {
            self.cannot(cmd, why);
        }
        self.say(Risk::Safe, cmd, "only reads");
    }

    /// fd: `-x`/`-X` run the rest of the line for each found path.
    pub(super) fn fd(&mut self, cmd: &Cmd<'_>) {
        let exec = ["-x", "--exec", "-X", "--exec-batch"];
        let execs = |a: &Arg| a.lit().is_some_and(|t| exec.contains(&t));
        let at = cmd.args.iter().position(execs);
        let Some(inner) = at.and_then(|i| cmd.args.get(i + 1..)) else {
            return self.say(Risk::Safe, cmd, "only searches");
        };
        for words in fill_in(inner, None, None, true) {
            self.run(&words, &Input::Terminal);
        }
    }

    /// One `-o Key=Value` of ssh or scp.
    pub(super) fn ssh_option(&mut self, option: &Arg, shown: &str) {
        let Some(text) = option.lit() else {
            let why = "has an ssh option only known at run time";
            return self.unclassifiable(format!("`{shown}` {why}"));
        };
        let (key, value) = text
            .split_once(['=', ' '])
            .map_or((text, ""), |(k, v)| (k, v.trim_start_matches(['=', ' '])));
        let key = key.to_ascii_lowercase();
        let words = |k| rules::raw().list("words", k);
        if words("ssh-runs").has(&key) {
            self.code_string(&Arg::literal(&value.replace('%', "")), shown);
        } else if words("ssh-loads").has(&key) {
            let why = format!("sets ssh option {key}, which can run or load code");
            self.unclassifiable(format!("`{shown}` {why}"));
        }
    }
}

/// Skips a sed address (`1`, `$`, `/re/I`, `\%re%`, `1,+3`, `0~2`) and spaces.
fn skip_address(chars: &[char], mut i: usize) -> usize {
    loop {
        match chars.get(i) {
            Some(' ' | '\t') => i += 1,
            Some(c) if c.is_ascii_digit() || matches!(c, '$' | ',' | '~' | '+') => i += 1,
            Some('/') => i = skip_part(chars, i + 1, '/'),
            Some('\\') => match chars.get(i + 1) {
                Some(&d) => i = skip_part(chars, i + 2, d),
                None => return i + 1,
            },
            Some('I' | 'M') if i > 0 && chars.get(i - 1).is_some_and(|p| !p.is_alphabetic()) => {
                i += 1
            }
            _ => return i,
        }
    }
}

/// Skips to just after the next unescaped `delim`.
fn skip_part(chars: &[char], mut i: usize, delim: char) -> usize {
    while let Some(&c) = chars.get(i) {
        if c == '\\' {
            i += 2;
            continue;
        }
        i += 1;
        if c == delim {
            break;
        }
    }
    i
}

/// The argument up to the end of the line (or a `;` when `semicolon` ends it).
fn rest_of_line(chars: &[char], i: usize, semicolon: bool) -> (String, usize) {
    let rest = chars.get(i..).unwrap_or(&[]);
    let ends = |c: &char| *c == '\n' || (semicolon && (*c == ';' || *c == '}'));
    let end = rest.iter().position(ends).unwrap_or(rest.len());
    let arg: String = rest.iter().take(end).collect();
    (arg.trim().to_string(), i + end + 1)
}

/// An awk program with string and regex literals blanked out (`"..."` → `""`).
fn awk_code(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        let regex = c == '/' && !(prev.is_alphanumeric() || matches!(prev, ')' | ']' | '_' | '$'));
        if c == '"' || regex {
            out.push(c);
            while let Some(d) = chars.next() {
                if d == '\\' {
                    chars.next();
                    continue;
                }
                if d == c {
                    break;
                }
            }
            out.push(c);
            prev = c;
            continue;
        }
        if c == '#' {
            chars.by_ref().take_while(|d| *d != '\n').for_each(drop);
            continue;
        }
        out.push(c);
        if !c.is_whitespace() {
            prev = c;
        }
    }
    out
}

/// Whether a `print`/`printf` statement redirects its output (`> "f"`, `>> "f"`).
fn awk_redirects(code: &str) -> bool {
    code.split([';', '\n', '}', '{']).any(|stmt| {
        let tail = stmt.find("print").and_then(|at| stmt.get(at..));
        let mut depth = 0i32;
        tail.unwrap_or("").chars().any(|c| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            c == '>' && depth == 0
        })
    })
}

/// The file of `print > "file"` when the original text has one literal target.
fn literal_target(text: &str) -> Option<String> {
    let at = text.find('>')?;
    let rest = text.get(at..)?.trim_start_matches('>').trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(rest.get(..end)?.to_string())
}

/// `+CMD` that makes less run a command (`+!cmd`); a line number, a search,
/// `+G` and `+F` only move.
fn pager_command(t: &str) -> bool {
    t.strip_prefix('+').is_some_and(|c| {
        !(c.chars().all(|x| x.is_ascii_digit()) || c.starts_with('/') || c == "G" || c == "F")
    })
}
