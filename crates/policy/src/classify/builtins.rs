//! Bash builtins that change the shell itself. What the classifier models is
//! judged (assignments follow vars.rs, `set -e` changes nothing it relies
//! on); what it does not is unclassifiable: aliases, `enable`, `hash -p`,
//! `fc`, namerefs, `set -k`, parsing options (`shopt -s extglob`), and array
//! indexes holding expansions (`let 'a[$(cmd)]'`), which bash evaluates again.

use super::commands::Cmd;
use super::rules;
use super::walk::Walker;
use super::words::{ARITH_OPS, Arg, evaluated_again, subscript_expands};
use crate::model::Risk;

impl Walker {
    pub(super) fn declare(&mut self, cmd: &Cmd<'_>) {
        // The flags given so far (`-i`: integer, `-n`: nameref, `-f`: functions).
        let (mut flags, mut any) = (String::new(), false);
        for a in cmd.args {
            let t = a.lit().unwrap_or(&a.raw);
            if let Some(f) = t.strip_prefix(['-', '+']).filter(|_| !t.contains('=')) {
                flags.push_str(f);
                continue;
            }
            any = true;
            if flags.contains(['f', 'F']) {
                continue;
            }
            // NAME[=VALUE] as bash reads it: from the word's value when it
            // is known (`"PA"TH=x` sets PATH), else split as written.
            let (name, value) = match (a.lit(), a.raw.split_once('=')) {
                (Some(t), _) => match t.split_once('=') {
                    Some((n, v)) => (Some(n.trim_end_matches('+').into()), Some(Arg::literal(v))),
                    None => (Some(t.to_string()), None),
                },
                (None, Some((n, v))) => {
                    (self.word(n.trim_end_matches('+')).text, Some(self.word(v)))
                }
                (None, None) => (None, None),
            };
            let Some(name) = name else {
                self.cannot(cmd, "names a variable only known at run time");
                continue;
            };
            if flags.contains('n') {
                self.cannot(
                    cmd,
                    "makes a name refer to another variable, which the classifier does not follow",
                );
            }
            self.evaluated(&name, &cmd.shown);
            if flags.contains('i') {
                self.arith.integer(&name);
            }
            if let Some(value) = value {
                self.arith.assign(&name, &value);
                if flags.contains('i') {
                    self.arithmetic(value.lit().unwrap_or(&value.raw));
                }
                self.assign_variable(&name, &value, &cmd.shown, None);
            }
        }
        let what = if any { "sets variables" } else { "only lists" };
        self.note(Risk::Safe, format!("`{}` {what}", cmd.shown));
    }

    /// read, mapfile: the names read into; `mapfile -C` runs a callback.
    pub(super) fn read(&mut self, cmd: &Cmd<'_>) {
        let opts = self.options(cmd, cmd.args);
        // `read -a NAME` (mapfile's row has no `-a`).
        let array = opts.value_of(&["-a"]);
        for n in opts.pos.iter().chain(&array) {
            self.read_into(n, cmd);
        }
        self.say(Risk::Safe, cmd, "reads input into variables");
    }

    /// A variable `read`, `mapfile` or `printf -v` assigns (unknown) text to.
    fn read_into(&mut self, n: &Arg, cmd: &Cmd<'_>) {
        let name = n.lit().unwrap_or(&n.raw).to_string();
        self.evaluated(&name, &cmd.shown);
        self.arith.data(name.split('[').next().unwrap_or_default());
        if n.lit().is_none() {
            self.cannot(cmd, "assigns a variable named at run time");
        }
        self.assign_variable(&name, &Arg::unknown("$REPLY"), &cmd.shown, None);
    }

    /// printf: `-v NAME` assigns instead of printing.
    pub(super) fn printf(&mut self, cmd: &Cmd<'_>) {
        match cmd.args.get(1) {
            Some(name) => self.read_into(name, cmd),
            None => self.cannot(cmd, "has -v without a name"),
        }
        self.say(Risk::Safe, cmd, "only prints");
    }

    pub(super) fn names(&mut self, cmd: &Cmd<'_>) {
        for a in cmd.args.iter().filter(|a| !a.raw.starts_with('-')) {
            self.evaluated(a.lit().unwrap_or(&a.raw), &cmd.shown);
        }
        self.say(Risk::Safe, cmd, "only changes variables");
    }

    /// test, [: `-v NAME` evaluates NAME's array index (also when NAME is a
    /// command's output); arithmetic comparisons evaluate a literal index.
    /// A command's output compared with `-eq` is no risk here: `test` reads
    /// its operands as plain integers (only `[[ ]]` evaluates them).
    pub(super) fn test(&mut self, cmd: &Cmd<'_>) {
        for (i, a) in cmd.args.iter().enumerate() {
            let text = a.lit().unwrap_or(&a.raw);
            // The literal words before (-1) and after (1) this one.
            let near = |d| cmd.args.get(i.wrapping_add_signed(d)).and_then(Arg::lit);
            if near(-1) == Some("-v")
                && let Some((_, index)) = text.split_once('[')
            {
                self.arith.evaluates(index);
            }
            let named = near(-1) == Some("-v") && evaluated_again(text);
            let arith = |d| near(d).is_some_and(|o| ARITH_OPS.contains(&o));
            let compared = (arith(-1) || arith(1)) && subscript_expands(text);
            if named || compared {
                self.cannot(
                    cmd,
                    "evaluates an array index holding an expansion, or a command's output as a name (it can run commands)",
                );
            }
        }
        self.say(Risk::Safe, cmd, "only tests");
    }

    /// alias, enable, fc, hash: listing is safe; anything else changes what names run.
    pub(super) fn shell_state(&mut self, cmd: &Cmd<'_>) {
        let lists = cmd.args.iter().all(|a| {
            a.lit().is_some_and(|t| match cmd.name {
                "alias" => t == "-p" || !t.contains('='),
                "enable" => matches!(t, "-p" | "-a" | "-s"),
                "hash" => !(t.starts_with('-') && t.contains('p')),
                _ => t == "-l" || t.starts_with("-l") && !t.contains('s') || t == "-n",
            })
        });
        // `fc` without `-l` edits and runs commands of the history.
        let fc_lists = (cmd.args.iter()).any(|a| a.lit().is_some_and(|t| t.starts_with("-l")));
        let lists = lists && (cmd.name != "fc" || fc_lists);
        let why = "changes what command names run (aliases, builtins, hashed paths, history), which the classifier does not follow";
        match lists {
            true => self.say(Risk::Safe, cmd, "only lists"),
            false => self.cannot(cmd, why),
        }
    }

    pub(super) fn shopt(&mut self, cmd: &Cmd<'_>) {
        let sets = cmd.args.iter().any(|a| a.is("-s") || a.is("-u"));
        let options = cmd.args.iter().filter(|a| !a.raw.starts_with('-'));
        let risky: Vec<&str> = options
            .map(|a| a.lit().unwrap_or("?"))
            .filter(|o| !rules::raw().list("shell-options", "shopt").has(o))
            .collect();
        let why = format!(
            "changes how bash parses or runs commands ({})",
            risky.join(", ")
        );
        match sets && (!risky.is_empty() || cmd.args.iter().any(|a| a.is("-o"))) {
            true => self.cannot(cmd, &why),
            false => self.say(Risk::Safe, cmd, "sets harmless shell options"),
        }
    }

    pub(super) fn set(&mut self, cmd: &Cmd<'_>) {
        let mut args = cmd.args.iter();
        while let Some(a) = args.next() {
            let Some(t) = a.lit() else {
                self.cannot(cmd, "sets options only known at run time");
                break;
            };
            if t == "--" || t == "-" || !(t.starts_with('-') || t.starts_with('+')) {
                break;
            }
            if t == "-o" || t == "+o" {
                let name = args.next().and_then(Arg::lit).unwrap_or("");
                if !name.is_empty() && !rules::raw().list("shell-options", "set_o").has(name) {
                    self.unclassifiable(format!(
                        "`{}` sets shell option {name}, which changes how commands are read",
                        cmd.shown
                    ));
                }
            } else if t.contains('k') {
                let why = "makes assignments anywhere on a line reach the command (set -k)";
                self.cannot(cmd, why);
            }
        }
        self.say(Risk::Safe, cmd, "sets shell options");
    }
}
