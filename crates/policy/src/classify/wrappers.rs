//! Commands that run other commands. Rule: a wrapper is unwrapped and the
//! command it runs is judged (with the wrapper's own risk on top: `sudo` is
//! dangerous, `nsenter` too); a command line it takes as one string (`su -c`,
//! `flock -c`, `watch`, `env -S`) is parsed as a script; words it fills in at
//! run time (`xargs`, `parallel`, `find -exec`, `fd -x`) are substituted when
//! their input is literal text and unknown otherwise. The wrappers are the
//! `[[wrappers]]` of `crates/policy/src/rules/bash.toml` plus `xargs`,
//! `parallel` and `cmake -E`, which need a little more.

use super::commands::{Cmd, Opts, join_args, leading};
use super::files::given;
use super::rules::{self, Program};
use super::walk::{Input, Stage, Walker};
use super::words::Arg;
use crate::model::Risk;

impl Walker {
    /// A `[[wrappers]]` row's command: the command it runs is judged.
    pub(super) fn table_wrapper(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) {
        let Some(w) = rules::raw().wrapper(cmd.name) else {
            return;
        };
        let saved = self.cwd.clone();
        match self.unwrap(w, cmd) {
            Some(inner) if inner.is_empty() => self.say(Risk::Safe, cmd, "runs no command"),
            Some(inner) => stage.output = self.run(&inner, cmd.input).output,
            None => {}
        }
        // `env -C DIR`: only the inner command runs there.
        if w.chdir.iter().next().is_some() {
            self.cwd = saved;
        }
    }

    /// The command a table wrapper runs; None when it was judged already.
    fn unwrap(&mut self, w: &Program, cmd: &Cmd<'_>) -> Option<Vec<Arg>> {
        let what = format!("`{}`", cmd.shown);
        if let Some((risk, why)) = w.own_risk() {
            self.judge(risk, format!("{what} {why}"));
        }
        let (script, chdir, split) = (w.script.strs(), w.chdir.strs(), w.split_string.strs());
        let opts = leading(cmd.args, &w.valued());
        let rest = &opts.pos;
        for out in opts.values_of(&w.writes.strs()) {
            self.write_to(&out, &what);
        }
        let after_skip = rest.get(w.skip.min(rest.len())..).unwrap_or(&[]);
        // `env -S 'CMD ARGS' MORE`, `watch CMD ARGS`: one command line.
        let joined = w.joined_unless.iter().next().is_some() && !given(&opts, &w.joined_unless);
        if let Some(line) = opts.value_of(&split).or(joined.then(Arg::default)) {
            let words: Vec<Arg> = std::iter::once(line).chain(after_skip.to_vec()).collect();
            match words.get(usize::from(joined)..).unwrap_or_default() {
                [] => self.say(Risk::Safe, cmd, "runs no command"),
                words => self.code_string(&join_args(words), &cmd.shown),
            }
            return None;
        }
        if let Some(dir) = opts.value_of(&chdir) {
            let t = self.target(&dir);
            self.cwd = t.fixed().then(|| t.shown.into());
        }
        let is_script = |a: &Arg| a.lit().is_some_and(|t| w.script.has(t));
        let code = opts.value_of(&script).or_else(|| {
            let at = after_skip.iter().position(is_script);
            let at = at.filter(|p| *p == 0 || w.script_only);
            at.map(|p| after_skip.get(p + 1).cloned().unwrap_or_default())
        });
        if let Some(code) = code {
            self.code_string(&code, &cmd.shown);
            return None;
        }
        let stops = w.no_command.strs().into_iter().any(|n| {
            let short = n.len() == 2 && !n.starts_with("--");
            let cluster = |f: &String| short && !f.starts_with("--") && f.contains(&n[1..]);
            opts.flags.iter().any(|f| f == n || cluster(f))
        });
        if stops || w.script_only {
            self.say(Risk::Safe, cmd, "runs no command");
            if w.script_only && w.own_risk().is_some() && !stops {
                self.input_script(cmd, w.pipe_script, SHELL_INPUT);
            }
            return None;
        }
        // Leading `VAR=value` words (sudo, env) are assignments.
        let assigns = after_skip.iter().take_while(|a| is_assignment(&a.raw));
        let (assigns, inner) = after_skip.split_at(assigns.count());
        for a in assigns {
            self.assignment_word(a, &cmd.shown);
        }
        if inner.is_empty() && w.as_root {
            // `sudo -s`, `sudo -i`: a root shell reading standard input.
            self.input_script(cmd, false, SHELL_INPUT);
        }
        Some(inner.to_vec())
    }

    /// Judges `cmd`'s literal standard input as a script (`at`; `su`
    /// without `-c`, not from a pipe unless `pipe`); unclassifiable (`why`)
    /// when unknown.
    pub(super) fn input_script(&mut self, cmd: &Cmd<'_>, pipe: bool, why: &str) {
        match cmd.input {
            Input::Terminal => {}
            Input::Text(Some(t)) => self.script(&t.clone()),
            Input::Pipe(Some(t)) if pipe => self.script(&t.clone()),
            _ => self.cannot(cmd, why),
        }
    }

    /// `VAR=value` given to env or sudo.
    pub(super) fn assignment_word(&mut self, a: &Arg, shown: &str) {
        let Some((name, value)) = a.raw.split_once('=') else {
            return;
        };
        let value = self.word(value);
        self.arith.assign(name, &value);
        self.assign_variable(name, &value, shown, None);
    }

    /// `xargs [options] command...`, GNU parallel's `parallel [options]
    /// command ::: args` (the command runs in a shell): the command runs with
    /// words read from input.
    pub(super) fn xargs(&mut self, cmd: &Cmd<'_>) {
        let parallel = cmd.name != "xargs";
        let opts = leading(cmd.args, &self.with_value(cmd));
        if opts.value_of(&["-S", "--sshlogin"]).is_some() {
            self.network(format!("`{}` runs commands on other hosts", cmd.shown));
        }
        let rest = &opts.pos;
        let source = |a: &Arg| parallel && a.lit().is_some_and(|t| t.starts_with(":::"));
        let (command, sources) = rest.split_at(rest.iter().position(source).unwrap_or(rest.len()));
        let from_file = opts.value_of(&["-a", "--arg-file"]).is_some();
        let items: Option<Vec<String>> = match sources.first().and_then(Arg::lit) {
            Some(":::") => sources.iter().skip(1).map(|a| a.text.clone()).collect(),
            Some(_) => None,
            None => (!from_file).then(|| input_words(cmd.input)).flatten(),
        };
        let replace = opts.value_of(&["-I"]).and_then(|r| r.text);
        let replace = match parallel {
            true => replace.or(Some("{}".into())),
            false => replace.or_else(|| optional_replace(&opts)),
        };
        let replace = replace.filter(|r| parallel || !r.is_empty());
        let (echo, echoes) = ([Arg::literal("echo")], command.is_empty() && !parallel);
        let command = if echoes { &echo[..] } else { command };
        for args in fill_in(command, items.as_deref(), replace.as_deref(), parallel) {
            match args.iter().map(Arg::lit).collect::<Option<Vec<_>>>() {
                Some(words) if parallel => self.subshell_script(&words.join(" ")),
                _ => {
                    self.run(&args, &Input::Terminal);
                }
            }
        }
        self.say(Risk::Safe, cmd, "runs a command on its input");
    }

    /// `cmake -E TOOL ARGS`: cmake's portable file tools (`[words]` cmake-tools).
    pub(super) fn cmake_tool(&mut self, cmd: &Cmd<'_>, stage: &mut Stage) {
        let words = |k| rules::raw().list("words", k);
        let Some((tool, rest)) = cmd.args.get(1..).and_then(<[Arg]>::split_first) else {
            return self.say(Risk::Safe, cmd, "lists its tools");
        };
        let tool = tool.lit().unwrap_or("\0");
        if words("cmake-reads").has(tool) {
            return self.say(Risk::Safe, cmd, "only reads or prints");
        }
        let row = words("cmake-tools")
            .iter()
            .find_map(|r| r.strip_prefix(tool)?.strip_prefix(": "));
        let Some(head) = row else {
            return self.cannot(cmd, "runs a `cmake -E` tool the classifier does not know");
        };
        let head = head.split(' ').map(Arg::literal);
        let inner: Vec<Arg> = head.chain(rest.iter().cloned()).collect();
        stage.output = self.run(&inner, cmd.input).output;
    }
}

/// Why a shell reading input the classifier cannot read is unclassifiable.
const SHELL_INPUT: &str = "runs a shell on input the classifier cannot read";

/// Most input items substituted one by one; more are judged as unknown words.
const MAX_ITEMS: usize = 16;

/// The words a literal standard input gives (xargs, parallel); None when unknown.
fn input_words(input: &Input) -> Option<Vec<String>> {
    let (Input::Text(Some(t)) | Input::Pipe(Some(t))) = input else {
        return None;
    };
    let unquote = |s: &str| s.trim_matches(['\'', '"']).to_string();
    Some(t.split_whitespace().map(unquote).collect())
}

/// The command lines a word-filling wrapper runs: `replace` marks the place
/// of each item (else items are appended); unknown items give unknown words.
/// With `braces`, GNU parallel's other replacement strings (`{.}`, `{/}`) are unknown too.
pub(super) fn fill_in(
    command: &[Arg],
    items: Option<&[String]>,
    replace: Option<&str>,
    braces: bool,
) -> Vec<Vec<Arg>> {
    let one = |item: Option<&str>| -> Vec<Arg> {
        let mut used = false;
        let mut fill = |a: &Arg| {
            let Some(t) = a.lit() else { return a.clone() };
            let hit = replace.filter(|r| t.contains(r));
            let brace = braces && t.contains('{') && t.contains('}');
            used |= hit.is_some() || brace;
            match (hit, item) {
                (Some(r), Some(v)) => Arg::literal(&t.replace(r, v)),
                (None, _) if !brace => a.clone(),
                _ => Arg::unknown(&a.raw),
            }
        };
        let mut out: Vec<Arg> = command.iter().map(&mut fill).collect();
        if !used {
            out.push(item.map_or_else(|| Arg::unknown("<input>"), Arg::literal));
        }
        out
    };
    match items {
        Some(list) if !list.is_empty() && list.len() <= MAX_ITEMS => {
            list.iter().map(|i| one(Some(i))).collect()
        }
        Some([]) => vec![command.to_vec()],
        _ => vec![one(None)],
    }
}

/// xargs's `-i[R]` / `--replace[=R]` (the value only attached): R, or `{}`.
fn optional_replace(opts: &Opts) -> Option<String> {
    let value = opts.flags.iter().find_map(|f| match f.starts_with("--") {
        true => {
            let (name, value) = f.split_once('=').unwrap_or((f, ""));
            super::commands::long_matches(name, "--replace").then_some(value)
        }
        false => f.get(1..)?.find('i').and_then(|at| f.get(at + 2..)),
    })?;
    Some(if value.is_empty() { "{}" } else { value }.to_string())
}

fn is_assignment(t: &str) -> bool {
    t.split_once('=')
        .is_some_and(|(name, _)| super::words::is_name(name))
}
