//! Walks the brush-parser AST: every simple command, compound command, function
//! body, redirection, command and process substitution is visited; nested
//! scripts (`bash -c`, `eval`, here-docs fed to shells) come back through
//! [`Walker::script`]. Tracks `cd` lexically where the target is a literal.

use super::nesting;
use super::paths::{Loc, Places};
use super::words::{self, Arg, Dirs};
use super::{Classification, ClassifyContext, one_line};
use crate::model::Risk;
use brush_parser::ast;
use std::path::PathBuf;

/// Deepest chain of re-parsed scripts (`bash -c`, `eval`, `$(...)`, here-docs).
const MAX_DEPTH: usize = 8;
/// Deepest `[[ ... ]]` expression walked.
const MAX_TEST_DEPTH: usize = 32;

/// Where a command's standard input comes from.
#[derive(Debug, Clone)]
pub(super) enum Input {
    Terminal,
    /// The output of the previous stage; Some(text) when it is static (`echo ...`).
    Pipe(Option<String>),
    /// A here-document or here-string; None when its text is not static.
    Text(Option<String>),
    /// A file (`< FILE`).
    File(Arg),
}

/// What the pipeline logic needs to know about one stage.
#[derive(Debug, Default)]
pub(super) struct Stage {
    /// The command as written, for reasons.
    pub shown: String,
    /// What the command prints, when it is static (`echo ...`, `cat <<EOF`).
    pub output: Option<String>,
}

/// The classifier's state while walking one command line.
#[derive(Default)]
pub(super) struct Walker {
    pub places: Places,
    pub home: Option<String>,
    pub cwd: Option<PathBuf>,
    /// The folder before the last `cd` (`$OLDPWD`, `~-`), when known.
    pub oldpwd: Option<PathBuf>,
    /// The highest risk found, with the first reason at that level.
    top: Option<(Risk, String)>,
    /// The first reason the command must never run.
    blocked: Option<String>,
    /// The first reason part of the command could not be read.
    unreadable: Option<String>,
    depth: usize,
    nest_used: usize,
    /// Functions defined so far, and whether their body changes directory.
    functions: Vec<(String, bool)>,
    defining: Vec<String>,
    /// Calls made inside function bodies: (caller, callee, spawned in the background or a pipe).
    calls: Vec<(String, String, bool)>,
    /// Walking a command run in the background or a pipeline stage.
    spawned: bool,
    /// Depth of loops that never end (`while true`), for unbounded background spawning.
    forever: usize,
    /// The script may change `$PLANGATE_STEP_ARTIFACTS` or `$TMPDIR`: it
    /// names one other than to expand it, in its text or in a word's value
    /// (`TMPDIR=x`, `unset TMPDIR`, `read "TMP""DIR"`, `${TMPDIR:=x}`,
    /// `(( TMPDIR = 1 ))`); `classify_bash` then walks again without
    /// trusting them.
    pub scratch_named: bool,
    /// Names holding data and names arithmetic evaluates (arith.rs).
    pub arith: super::arith::Arith,
}

impl Walker {
    /// `scratch`: whether `$PLANGATE_STEP_ARTIFACTS` and `$TMPDIR` are
    /// plangate's step-private folders (see [`Walker::scratch_named`]).
    pub(super) fn new(ctx: &ClassifyContext<'_>, scratch: bool) -> Self {
        let home = ctx.home.map(super::paths::normalize);
        Self {
            home: home.as_ref().map(|h| h.to_string_lossy().into_owned()),
            places: Places {
                workspace: super::paths::normalize(ctx.workspace),
                home,
                scratch,
            },
            cwd: Some(super::paths::normalize(ctx.working_dir)),
            ..Self::default()
        }
    }

    /// The verdict: blocked, else unclassifiable, else the highest risk.
    pub(super) fn finish(mut self) -> Classification {
        // Code hidden in data runs with the step's rights: where the step
        // only reads (safe: a read-only sandbox) that is no more than it
        // may do; where it writes, it could destroy what it may write.
        if let Some((why, code)) = self.arith.problem() {
            let writes = self.top.as_ref().is_some_and(|(r, _)| *r > Risk::Safe);
            if code || writes {
                self.unclassifiable(why);
            }
        }
        if let Some(reason) = self.blocked {
            Classification::Blocked { reason }
        } else if let Some(reason) = self.unreadable {
            Classification::Unclassifiable { reason }
        } else {
            let empty = (Risk::Safe, "empty command does nothing".to_string());
            let (risk, reason) = self.top.unwrap_or(empty);
            Classification::Judged { risk, reason }
        }
    }

    /// Records a command's risk; keeps the first reason at the highest level.
    pub(super) fn note(&mut self, risk: Risk, reason: String) {
        if self.top.as_ref().is_none_or(|(r, _)| risk > *r) {
            self.top = Some((risk, one_line(&reason)));
        }
    }

    /// Records that the command must never run.
    pub(super) fn block(&mut self, reason: String) {
        self.blocked.get_or_insert_with(|| one_line(&reason));
    }

    /// Records that part of the command could not be read.
    pub(super) fn unclassifiable(&mut self, reason: String) {
        self.unreadable.get_or_insert_with(|| one_line(&reason));
    }

    /// Records a use of the network (at least moderate).
    pub(super) fn network(&mut self, reason: String) {
        self.note(Risk::Moderate, reason);
    }

    /// Parses and walks a (possibly nested) script.
    pub(super) fn script(&mut self, src: &str) {
        self.scratch_named |= words::mentions_scratch_var(src);
        let nest = match nesting::too_complex(src) {
            Err(why) => return self.unclassifiable(why),
            Ok(n) => n,
        };
        if self.depth >= MAX_DEPTH || self.nest_used + nest > nesting::MAX_NESTING {
            let why = "nested scripts (bash -c, eval, $(...)) are too deeply nested to follow";
            return self.unclassifiable(why.to_string());
        }
        let parsed = words::parse_guarded(|options| {
            brush_parser::Parser::new(std::io::Cursor::new(src.as_bytes()), options).parse_program()
        });
        match parsed {
            Ok(program) => {
                self.depth += 1;
                self.nest_used += nest;
                for list in &program.complete_commands {
                    self.compound_list(list);
                }
                self.nest_used -= nest;
                self.depth -= 1;
            }
            Err(e) => self.unclassifiable(format!("cannot parse `{}`: {e}", short(src))),
        }
    }

    /// Walks a nested script in a subshell: `cd` inside does not leak out.
    pub(super) fn subshell_script(&mut self, src: &str) {
        self.isolated(|me| me.script(src));
    }

    /// Runs `f` as in a subshell: a `cd` inside does not leak out.
    fn isolated<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let saved = self.cwd.clone();
        let r = f(self);
        self.cwd = saved;
        r
    }

    /// Evaluates a word, classifying the command substitutions inside it.
    pub(super) fn word(&mut self, raw: &str) -> Arg {
        self.arith.word(raw);
        let mut eval = words::eval_word(raw, self.home.as_deref());
        if raw.contains('~') || raw.contains("PWD") {
            // `$PWD`, `~+`, `$OLDPWD`, `~-` (the folders the walk followed)
            // and `~root`: taken only when the path they give is worse than
            // an unknown one (the script may assign them: never lower).
            let text = |d: &Option<PathBuf>| d.as_deref().map(|d| d.to_string_lossy().into_owned());
            let (pwd, oldpwd) = (text(&self.cwd), text(&self.oldpwd));
            let dirs = Dirs {
                pwd: pwd.as_deref(),
                oldpwd: oldpwd.as_deref(),
                root_home: true,
            };
            let known = words::evaluate(raw, self.home.as_deref(), dirs, false);
            // (Resolved without a working directory: only absolute paths.)
            let loc = self.places.resolve(&known.arg, None).loc;
            let worse = loc.system() || matches!(loc, Loc::Home | Loc::WsAncestor);
            if worse && known.arg.glob_at.is_none() && known.arg.lit().is_some() {
                eval = known;
            }
        }
        self.absorb(eval)
    }

    /// Evaluates a command word after brace expansion: `{a,b}` gives two arguments.
    pub(super) fn words(&mut self, raw: &str) -> Vec<Arg> {
        let list = super::braces::expand(raw).unwrap_or_else(|| {
            if super::braces::alternative_moves(raw) {
                self.unclassifiable(format!(
                    "`{raw}` expands to more than {} words, some of them paths the classifier cannot follow",
                    super::braces::MAX_WORDS
                ));
            }
            vec![raw.to_string()]
        });
        list.iter().map(|w| self.word(w)).collect()
    }

    /// Takes in a word's problem and command substitutions; gives its value.
    fn absorb(&mut self, eval: words::WordEval) -> Arg {
        if let Some(p) = eval.problem {
            self.unclassifiable(p);
        }
        for s in eval.scripts {
            self.subshell_script(&s);
        }
        eval.arg
    }

    fn compound_list(&mut self, list: &ast::CompoundList) {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            let saved = self.spawned;
            let background = matches!(sep, ast::SeparatorOperator::Async);
            if background && self.forever > 0 {
                self.block(
                    "a loop that never ends starts commands in the background: unbounded process spawning (fork bomb)"
                        .to_string(),
                );
            }
            self.spawned |= background;
            self.pipeline(&and_or.first);
            for ast::AndOr::And(p) | ast::AndOr::Or(p) in &and_or.additional {
                self.pipeline(p);
            }
            self.spawned = saved;
        }
    }

    /// Each stage of a pipeline runs in a subshell, reading the previous one's output.
    fn pipeline(&mut self, p: &ast::Pipeline) {
        let multi = p.seq.len() > 1;
        let saved = self.spawned;
        self.spawned |= multi;
        let mut input = Input::Terminal;
        for cmd in &p.seq {
            let stage = if multi {
                self.isolated(|me| me.command(cmd, input))
            } else {
                self.command(cmd, input)
            };
            input = Input::Pipe(stage.output);
        }
        self.spawned = saved;
    }

    fn command(&mut self, cmd: &ast::Command, input: Input) -> Stage {
        match cmd {
            ast::Command::Simple(sc) => return self.simple(sc, input),
            ast::Command::Compound(c, redirects) => {
                self.redirects(redirects.as_ref());
                self.compound(c);
            }
            ast::Command::Function(f) => self.function(f),
            ast::Command::ExtendedTest(t, redirects) => {
                self.redirects(redirects.as_ref());
                self.extended_test(&t.expr, 0);
                self.note(Risk::Safe, "`[[ ... ]]` only tests".to_string());
            }
        }
        Stage::default()
    }

    /// The redirections of a compound command or a function body (their input is not followed).
    fn redirects(&mut self, list: Option<&ast::RedirectList>) {
        for r in list.map(|l| l.0.as_slice()).unwrap_or_default() {
            self.redirect(r, &mut Input::Terminal);
        }
    }

    fn simple(&mut self, sc: &ast::SimpleCommand, mut input: Input) -> Stage {
        let mut args = Vec::new();
        let mut assigned = Vec::new();
        for item in sc.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, &mut args, &mut input, Some(&mut assigned));
        }
        if let Some(w) = &sc.word_or_name {
            args.extend(self.words(&w.value));
        }
        for item in sc.suffix.iter().flat_map(|s| s.0.iter()) {
            self.item(item, &mut args, &mut input, None);
        }
        // A word whose value names the variable (`unset "TMP""DIR"`, `wait -p`).
        let mut lits = args.iter().filter_map(Arg::lit);
        self.scratch_named |= lits.any(words::mentions_scratch_var);
        if args.is_empty() {
            for (var, value) in &assigned {
                self.arith.assign(var, value);
                self.assign_variable(var, value, &format!("{var}={}", value.raw), None);
            }
            self.note(Risk::Safe, "assignment or redirection only".to_string());
            return Stage::default();
        }
        let name = args.first().and_then(Arg::lit).map(str::to_string);
        if let Some(name) = &name {
            self.check_fork_bomb(name);
        }
        let stage = self.run(&args, &input);
        for (var, value) in assigned {
            self.arith.assign(&var, &value);
            self.assign_variable(&var, &value, &stage.shown, name.as_deref());
        }
        stage
    }

    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        args: &mut Vec<Arg>,
        input: &mut Input,
        assigned: Option<&mut Vec<(String, Arg)>>,
    ) {
        use ast::CommandPrefixOrSuffixItem as I;
        match item {
            I::IoRedirect(r) => self.redirect(r, input),
            I::Word(w) => args.extend(self.words(&w.value)),
            I::AssignmentWord(a, w) => match assigned {
                Some(list) => {
                    let (ast::AssignmentName::VariableName(n)
                    | ast::AssignmentName::ArrayElementName(n, _)) = &a.name;
                    list.push((n.clone(), self.assignment(a)));
                }
                None => args.push(self.word(&w.value)),
            },
            I::ProcessSubstitution(_, sub) => {
                self.isolated(|me| me.compound_list(&sub.list));
                args.push(Arg {
                    procsub: true,
                    ..Arg::unknown("<(...)")
                });
            }
        }
    }

    /// Evaluates an assignment's value (unknown for arrays and appends).
    fn assignment(&mut self, a: &ast::Assignment) -> Arg {
        if let ast::AssignmentName::ArrayElementName(_, idx) = &a.name {
            self.arith.evaluates(idx);
        }
        if let ast::AssignmentName::ArrayElementName(n, idx) = &a.name
            && (idx.contains('$') || idx.contains('`'))
        {
            self.unclassifiable(format!(
                "`{n}[{idx}]=` indexes an array with an expansion, which bash evaluates again (it can run commands)"
            ));
        }
        match &a.value {
            ast::AssignmentValue::Scalar(w) => {
                let v = self.word(&w.value);
                if a.append { Arg::unknown(&v.raw) } else { v }
            }
            ast::AssignmentValue::Array(items) => {
                for (k, v) in items {
                    if let Some(k) = k {
                        self.evaluated(&format!("[{}]", k.value), "(...)");
                        self.word(&k.value);
                    }
                    self.word(&v.value);
                }
                Arg::unknown("(...)")
            }
        }
    }

    fn redirect(&mut self, r: &ast::IoRedirect, input: &mut Input) {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        let (fd, kind, word) = match r {
            ast::IoRedirect::File(fd, kind, T::Filename(w) | T::Duplicate(w)) => (fd, kind, w),
            ast::IoRedirect::File(_, _, T::Fd(_)) => return,
            ast::IoRedirect::File(_, _, T::ProcessSubstitution(_, sub)) => {
                return self.isolated(|me| me.compound_list(&sub.list));
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let home = self.home.as_deref();
                    self.absorb(words::evaluate(&doc.doc.value, home, Dirs::default(), true));
                }
                *input = Input::Text(Some(doc.doc.value.clone()));
                return;
            }
            ast::IoRedirect::HereString(_, w) => {
                *input = Input::Text(self.word(&w.value).text);
                return;
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let arg = self.word(&w.value);
                return self.write_to(&arg, &format!("redirection `&> {}`", arg.raw));
            }
        };
        let arg = self.word(&word.value);
        let writes = match kind {
            K::Read => {
                if fd.is_none_or(|f| f == 0) {
                    *input = Input::File(arg.clone());
                }
                if self.target(&arg).loc == Loc::DevNet {
                    let why = format!("redirection `< {}` opens a network connection", arg.raw);
                    self.network(why);
                }
                false
            }
            K::Write | K::Append | K::Clobber | K::ReadAndWrite => true,
            K::DuplicateInput | K::DuplicateOutput => !is_fd_word(&arg),
        };
        if writes {
            self.write_to(&arg, &format!("redirection `> {}`", arg.raw));
        }
    }

    /// Walks code that may or may not run: a `cd` inside makes the directory unknown after.
    fn conditional(&mut self, f: impl FnOnce(&mut Self)) {
        let before = self.cwd.clone();
        f(self);
        if self.cwd != before {
            self.cwd = None;
        }
    }

    fn compound(&mut self, c: &ast::CompoundCommand) {
        use ast::CompoundCommand as C;
        match c {
            C::BraceGroup(g) => self.compound_list(&g.list),
            C::Subshell(s) => self.isolated(|me| me.compound_list(&s.list)),
            C::ForClause(f) => {
                let items: Vec<Arg> = (f.values.iter().flatten())
                    .flat_map(|w| self.words(&w.value))
                    .collect();
                // No `in` list: the positional parameters.
                match &f.values {
                    Some(_) => self.arith.items(&f.variable_name, &items),
                    None => self.arith.data(&f.variable_name),
                }
                let shown = format!("for {} in ...", f.variable_name);
                self.assign_variable(&f.variable_name, &Arg::unknown("$ITEM"), &shown, None);
                self.conditional(|me| me.compound_list(&f.body.list));
            }
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value);
                }
                let forever = f.condition.as_ref().is_none_or(|c| c.value.trim() == "1");
                self.conditional(|me| me.loop_body(forever, &f.body.list));
            }
            C::CaseClause(c) => {
                self.word(&c.value.value);
                self.conditional(|me| {
                    for item in &c.cases {
                        item.patterns.iter().for_each(|p| drop(me.word(&p.value)));
                        item.cmd.iter().for_each(|list| me.compound_list(list));
                    }
                });
            }
            C::IfClause(i) => self.conditional(|me| {
                me.compound_list(&i.condition);
                me.compound_list(&i.then);
                for e in i.elses.iter().flatten() {
                    e.condition.iter().for_each(|c| me.compound_list(c));
                    me.compound_list(&e.body);
                }
            }),
            C::WhileClause(w) | C::UntilClause(w) => {
                let until = matches!(c, C::UntilClause(_));
                let forever = constant_condition(&w.0) == Some(!until);
                self.conditional(|me| {
                    me.compound_list(&w.0);
                    me.loop_body(forever, &w.1.list);
                });
            }
            C::Arithmetic(a) => self.arithmetic(&a.expr.value),
            C::Coprocess(co) => {
                self.isolated(|me| me.command(&co.body, Input::Terminal));
            }
        }
    }

    /// Walks a loop body; `forever` when the loop has no end (`while true`).
    fn loop_body(&mut self, forever: bool, body: &ast::CompoundList) {
        self.forever += usize::from(forever);
        self.compound_list(body);
        self.forever -= usize::from(forever);
    }

    pub(super) fn arithmetic(&mut self, expr: &str) {
        self.arith.evaluates(expr);
        self.absorb(words::eval_word(expr, self.home.as_deref()));
        if let Some(why) = words::arithmetic_problem(expr) {
            self.unclassifiable(why);
        }
        self.note(Risk::Safe, "arithmetic only computes".to_string());
    }

    fn function(&mut self, f: &ast::FunctionDefinition) {
        let name = f.fname.value.clone();
        self.functions.push((name.clone(), false));
        self.defining.push(name.clone());
        let saved = self.cwd.clone();
        let saved_forever = std::mem::take(&mut self.forever);
        self.redirects(f.body.1.as_ref());
        self.compound(&f.body.0);
        let moves = self.cwd != saved;
        self.cwd = saved;
        self.forever = saved_forever;
        self.defining.pop();
        if moves && let Some(entry) = self.functions.iter_mut().rev().find(|(n, _)| *n == name) {
            entry.1 = true;
        }
    }

    /// Some(changes directory) when `name` is a function defined in the script.
    pub(super) fn function_named(&self, name: &str) -> Option<bool> {
        let f = self.functions.iter().rev().find(|(n, _)| n == name);
        f.map(|(_, moves)| *moves)
    }

    /// Records a call made inside a function body; a cycle of calls with one
    /// of them spawned (background or pipe) is a fork bomb (`f(){ f|f& }`,
    /// `a(){ b & }; b(){ a & }`).
    fn check_fork_bomb(&mut self, name: &str) {
        let Some(caller) = self.defining.last().cloned() else {
            return;
        };
        self.calls.push((caller, name.to_string(), self.spawned));
        if self.calls.len() > 512 {
            return;
        }
        let mut spawned = self.calls.iter().filter(|(_, _, s)| *s);
        let cyclic = spawned.any(|(from, to, _)| self.reaches(to, from));
        if cyclic {
            self.block(format!(
                "fork bomb: function `{name}` is called recursively in a background or piped process"
            ));
        }
    }

    /// Whether function `from` calls `to`, directly or through other functions.
    fn reaches(&self, from: &str, to: &str) -> bool {
        let mut seen: Vec<&str> = vec![from];
        let mut i = 0;
        while let Some(&f) = seen.get(i) {
            if f == to {
                return true;
            }
            for (_, callee, _) in self.calls.iter().filter(|(c, _, _)| c == f) {
                if !seen.contains(&callee.as_str()) {
                    seen.push(callee);
                }
            }
            i += 1;
        }
        false
    }

    /// `text` is a name or a number bash evaluates (`read NAME`, `[[ -v NAME ]]`,
    /// `[[ X -eq Y ]]`): an array index holding an expansion, or a command's
    /// output, is evaluated again (`a[$(cmd)]` runs cmd).
    pub(super) fn evaluated(&mut self, text: &str, shown: &str) {
        // A name's index is arithmetic (`read 'a[n]'`, `[[ -v a[n] ]]`).
        if let Some((_, index)) = text.split_once('[') {
            self.arith.evaluates(index);
        }
        if words::evaluated_again(text) {
            self.unclassifiable(format!(
                "`{shown}` has bash evaluate `{text}`, an array index or a command's output, again (it can run commands)"
            ));
        }
    }

    fn extended_test(&mut self, e: &ast::ExtendedTestExpr, depth: usize) {
        use ast::ExtendedTestExpr as E;
        if depth > MAX_TEST_DEPTH {
            self.unclassifiable("`[[ ... ]]` expression nests too deeply".to_string());
            return;
        }
        match e {
            E::And(a, b) | E::Or(a, b) => {
                self.extended_test(a, depth + 1);
                self.extended_test(b, depth + 1);
            }
            E::Not(a) | E::Parenthesized(a) => self.extended_test(a, depth + 1),
            E::UnaryTest(op, w) => {
                self.word(&w.value);
                // `-v NAME`, `-R NAME` (brush-parser prints predicates as written).
                if matches!(op.to_string().as_str(), "-v" | "-R") {
                    self.evaluated(&w.value, "[[ ... ]]");
                }
            }
            E::BinaryTest(op, a, b) => {
                self.word(&a.value);
                self.word(&b.value);
                if words::ARITH_OPS.contains(&op.to_string().as_str()) {
                    self.arith.evaluates(&a.value);
                    self.arith.evaluates(&b.value);
                    self.evaluated(&a.value, "[[ ... ]]");
                    self.evaluated(&b.value, "[[ ... ]]");
                }
            }
        }
    }
}

/// Some(value) when a loop condition is a constant: `true`, `:` (true), `false` (false).
fn constant_condition(list: &ast::CompoundList) -> Option<bool> {
    let [ast::CompoundListItem(and_or, _)] = list.0.as_slice() else {
        return None;
    };
    let [ast::Command::Simple(sc)] = and_or.first.seq.as_slice() else {
        return None;
    };
    let alone = and_or.additional.is_empty() && !and_or.first.bang;
    if !alone || sc.suffix.is_some() || sc.prefix.is_some() {
        return None;
    }
    match sc.word_or_name.as_ref()?.value.as_str() {
        "true" | ":" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// `2>&1`, `>&-`: duplicating or closing a descriptor writes no file.
fn is_fd_word(arg: &Arg) -> bool {
    arg.lit().is_some_and(|t| {
        t == "-" || (!t.is_empty() && t.trim_end_matches('-').chars().all(|c| c.is_ascii_digit()))
    })
}

/// The first line of a script, for reasons (whole: reasons are cut after
/// redaction, by `engine::decide_all`).
pub(super) fn short(s: &str) -> String {
    let mut out = s.lines().next().unwrap_or("").trim().to_owned();
    if s.trim().lines().nth(1).is_some() {
        out.push_str("...");
    }
    out
}
