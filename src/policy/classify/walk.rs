//! Walks the brush-parser AST: every simple command, compound command, function
//! body, redirection, command and process substitution is visited; nested
//! scripts (`bash -c`, `eval`, here-docs fed to shells) come back through
//! [`Walker::script`]. Tracks `cd` lexically where the target is a literal.

use super::nesting;
use super::paths::Places;
use super::words::{self, Arg};
use super::{ClassifyContext, Findings};
use crate::model::Risk;
use brush_parser::ast;
use std::path::PathBuf;

/// Deepest chain of re-parsed scripts (`bash -c`, `eval`, `$(...)`, here-docs).
const MAX_DEPTH: usize = 8;
/// Deepest `[[ ... ]]` expression walked.
const MAX_TEST_DEPTH: usize = 32;

/// Where a command's standard input comes from.
#[derive(Debug, Clone)]
pub(crate) enum Input {
    Terminal,
    Pipe,
    /// A here-document or here-string; None when its text is not static.
    Text(Option<String>),
    File,
}

/// What the pipeline logic needs to know about one stage.
#[derive(Debug, Default)]
pub(crate) struct Stage {
    /// The command as written, for reasons.
    pub shown: String,
    /// Some(shell) when the command executes its standard input as code.
    pub stdin_script: Option<String>,
    /// What the command prints, when it is static (`echo ...`, `cat <<EOF`).
    pub output: Option<String>,
}

/// The classifier's state while walking one command line.
pub(crate) struct Walker {
    pub(crate) places: Places,
    pub(crate) home: Option<String>,
    pub(crate) cwd: Option<PathBuf>,
    findings: Findings,
    depth: usize,
    nest_used: usize,
    functions: Vec<String>,
    defining: Vec<String>,
    in_pipe: bool,
    in_background: bool,
}

impl Walker {
    pub(crate) fn new(ctx: &ClassifyContext<'_>) -> Self {
        let workspace = super::paths::normalize(ctx.workspace);
        let cwd = super::paths::normalize(ctx.working_dir);
        Self {
            places: Places {
                workspace,
                home: ctx.home.map(super::paths::normalize),
            },
            home: ctx
                .home
                .map(|h| super::paths::normalize(h).to_string_lossy().into_owned()),
            cwd: Some(cwd),
            findings: Findings::default(),
            depth: 0,
            nest_used: 0,
            functions: Vec::new(),
            defining: Vec::new(),
            in_pipe: false,
            in_background: false,
        }
    }

    pub(crate) fn into_findings(self) -> Findings {
        self.findings
    }

    pub(crate) fn note(&mut self, risk: Risk, reason: String) {
        self.findings.note(risk, reason);
    }

    pub(crate) fn block(&mut self, reason: String) {
        self.findings.block(reason);
    }

    pub(crate) fn unclassifiable(&mut self, reason: String) {
        self.findings.unclassifiable(reason);
    }

    /// Parses and walks a (possibly nested) script.
    pub(crate) fn script(&mut self, src: &str) {
        if self.depth >= MAX_DEPTH {
            self.unclassifiable(format!(
                "scripts nest (bash -c, eval, $(...)) deeper than {MAX_DEPTH} levels"
            ));
            return;
        }
        let nest = match nesting::too_complex(src) {
            Err(why) => return self.unclassifiable(why),
            Ok(n) => n,
        };
        if self.nest_used + nest > nesting::MAX_NESTING {
            self.unclassifiable("nested scripts are too deeply nested to follow".to_string());
            return;
        }
        // brush-parser can panic on hostile input (fuzzing found `333…3>d)`:
        // an fd number that overflows); a panic there means "cannot read it".
        let parsed = std::panic::catch_unwind(|| {
            let options = brush_parser::ParserOptions::default();
            let mut parser =
                brush_parser::Parser::new(std::io::Cursor::new(src.as_bytes()), &options);
            parser.parse_program().map_err(|e| e.to_string())
        })
        .unwrap_or_else(|_| Err("the shell parser failed on it".to_owned()));
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
    pub(crate) fn subshell_script(&mut self, src: &str) {
        let saved = self.cwd.clone();
        self.script(src);
        self.cwd = saved;
    }

    /// Evaluates a word, classifying the command substitutions inside it.
    pub(crate) fn word(&mut self, raw: &str) -> Arg {
        let eval = words::eval_word(raw, self.home.as_deref());
        self.absorb(eval.scripts, eval.problem);
        eval.arg
    }

    fn absorb(&mut self, scripts: Vec<String>, problem: Option<String>) {
        if let Some(p) = problem {
            self.unclassifiable(p);
        }
        for s in scripts {
            self.subshell_script(&s);
        }
    }

    fn compound_list(&mut self, list: &ast::CompoundList) {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            let saved = self.in_background;
            self.in_background |= matches!(sep, ast::SeparatorOperator::Async);
            self.and_or(and_or);
            self.in_background = saved;
        }
    }

    fn and_or(&mut self, list: &ast::AndOrList) {
        self.pipeline(&list.first);
        for next in &list.additional {
            match next {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p),
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline) {
        let multi = p.seq.len() > 1;
        let saved_cwd = self.cwd.clone();
        let saved_pipe = self.in_pipe;
        self.in_pipe |= multi;
        let mut previous: Option<Stage> = None;
        for (i, cmd) in p.seq.iter().enumerate() {
            if multi {
                self.cwd.clone_from(&saved_cwd);
            }
            let input = if i > 0 { Input::Pipe } else { Input::Terminal };
            let stage = self.command(cmd, input);
            if let (Some(shell), Some(prev)) = (&stage.stdin_script, &previous) {
                self.piped_into_shell(prev, shell);
            }
            previous = Some(stage);
        }
        self.in_pipe = saved_pipe;
        if multi {
            self.cwd = saved_cwd;
        }
    }

    fn piped_into_shell(&mut self, producer: &Stage, shell: &str) {
        match &producer.output {
            Some(text) => self.subshell_script(text),
            None => self.note(
                Risk::Dangerous,
                format!(
                    "`{}` pipes output into `{shell}`, which runs it as code",
                    producer.shown
                ),
            ),
        }
    }

    fn command(&mut self, cmd: &ast::Command, input: Input) -> Stage {
        match cmd {
            ast::Command::Simple(sc) => self.simple(sc, input),
            ast::Command::Compound(c, redirects) => {
                let mut input = input;
                self.redirects(redirects.as_ref(), &mut input);
                self.compound(c);
                Stage::default()
            }
            ast::Command::Function(f) => {
                self.function(f);
                Stage::default()
            }
            ast::Command::ExtendedTest(t, redirects) => {
                let mut input = input;
                self.redirects(redirects.as_ref(), &mut input);
                self.extended_test(&t.expr, 0);
                self.note(Risk::Safe, "`[[ ... ]]` only tests".to_string());
                Stage::default()
            }
        }
    }

    fn redirects(&mut self, list: Option<&ast::RedirectList>, input: &mut Input) {
        for r in list.map(|l| l.0.as_slice()).unwrap_or_default() {
            self.redirect(r, input);
        }
    }

    fn simple(&mut self, sc: &ast::SimpleCommand, input: Input) -> Stage {
        let mut input = input;
        let mut args = Vec::new();
        let mut assigned = Vec::new();
        let prefix = sc.prefix.iter().flat_map(|p| p.0.iter());
        let name = sc.word_or_name.iter();
        let suffix = sc.suffix.iter().flat_map(|s| s.0.iter());
        for item in prefix {
            self.item(item, &mut args, &mut input, Some(&mut assigned));
        }
        for w in name {
            let arg = self.word(&w.value);
            args.push(arg);
        }
        for item in suffix {
            self.item(item, &mut args, &mut input, None);
        }
        if args.is_empty() {
            self.note(Risk::Safe, "assignment or redirection only".to_string());
            return Stage::default();
        }
        if let Some(name) = args.first().and_then(Arg::lit) {
            let name = name.to_string();
            self.check_fork_bomb(&name);
        }
        let stage = self.run(&args, &input);
        for var in assigned {
            self.env_assignment(&var, &stage.shown);
        }
        stage
    }

    fn item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        args: &mut Vec<Arg>,
        input: &mut Input,
        assigned: Option<&mut Vec<String>>,
    ) {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r, input),
            ast::CommandPrefixOrSuffixItem::Word(w) => {
                let arg = self.word(&w.value);
                args.push(arg);
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w) => match assigned {
                Some(list) => {
                    self.assignment(a);
                    list.push(assignment_name(a));
                }
                None => {
                    let arg = self.word(&w.value);
                    args.push(arg);
                }
            },
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                self.subshell(&sub.list);
                args.push(Arg {
                    raw: "<(...)".to_string(),
                    procsub: true,
                    ..Arg::default()
                });
            }
        }
    }

    fn assignment(&mut self, a: &ast::Assignment) {
        match &a.value {
            ast::AssignmentValue::Scalar(w) => {
                self.word(&w.value);
            }
            ast::AssignmentValue::Array(items) => {
                for (k, v) in items {
                    if let Some(k) = k {
                        self.word(&k.value);
                    }
                    self.word(&v.value);
                }
            }
        }
    }

    /// Flags assignments that change how later commands are found or run.
    pub(crate) fn env_assignment(&mut self, name: &str, shown: &str) {
        const SENSITIVE: [&str; 9] = [
            "PATH",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "BASH_ENV",
            "ENV",
            "PROMPT_COMMAND",
            "IFS",
            "GIT_SSH_COMMAND",
            "GIT_EXEC_PATH",
        ];
        if SENSITIVE.contains(&name) {
            self.note(
                Risk::Moderate,
                format!("`{shown}` sets {name}, which changes how commands run"),
            );
        }
    }

    fn redirect(&mut self, r: &ast::IoRedirect, input: &mut Input) {
        match r {
            ast::IoRedirect::File(fd, kind, target) => self.file_redirect(*fd, kind, target, input),
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let eval = words::eval_heredoc(&doc.doc.value, self.home.as_deref());
                    self.absorb(eval.scripts, eval.problem);
                }
                *input = Input::Text(Some(doc.doc.value.clone()));
            }
            ast::IoRedirect::HereString(_, w) => {
                let arg = self.word(&w.value);
                *input = Input::Text(arg.text);
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let arg = self.word(&w.value);
                self.write_to(&arg, &format!("redirection `&> {}`", arg.raw));
            }
        }
    }

    fn file_redirect(
        &mut self,
        fd: Option<ast::IoFd>,
        kind: &ast::IoFileRedirectKind,
        target: &ast::IoFileRedirectTarget,
        input: &mut Input,
    ) {
        use ast::IoFileRedirectKind as K;
        let word = match target {
            ast::IoFileRedirectTarget::Filename(w) | ast::IoFileRedirectTarget::Duplicate(w) => w,
            ast::IoFileRedirectTarget::Fd(_) => return,
            ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                self.subshell(&sub.list);
                return;
            }
        };
        let arg = self.word(&word.value);
        let writes = match kind {
            K::Read => {
                if fd.is_none_or(|f| f == 0) {
                    *input = Input::File;
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

    fn subshell(&mut self, list: &ast::CompoundList) {
        let saved = self.cwd.clone();
        self.compound_list(list);
        self.cwd = saved;
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
            C::Subshell(s) => self.subshell(&s.list),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value);
                }
                self.conditional(|me| me.compound_list(&f.body.list));
            }
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value);
                }
                self.conditional(|me| me.compound_list(&f.body.list));
            }
            C::CaseClause(c) => self.case(c),
            C::IfClause(i) => self.conditional(|me| me.if_clause(i)),
            C::WhileClause(w) | C::UntilClause(w) => self.conditional(|me| {
                me.compound_list(&w.0);
                me.compound_list(&w.1.list);
            }),
            C::Arithmetic(a) => self.arithmetic(&a.expr.value),
            C::Coprocess(co) => {
                let saved = self.cwd.clone();
                self.command(&co.body, Input::Terminal);
                self.cwd = saved;
            }
        }
    }

    fn arithmetic(&mut self, expr: &str) {
        let eval = words::eval_word(expr, self.home.as_deref());
        self.absorb(eval.scripts, eval.problem);
        self.note(Risk::Safe, "arithmetic only computes".to_string());
    }

    fn case(&mut self, c: &ast::CaseClauseCommand) {
        self.word(&c.value.value);
        self.conditional(|me| {
            for item in &c.cases {
                for p in &item.patterns {
                    me.word(&p.value);
                }
                if let Some(list) = &item.cmd {
                    me.compound_list(list);
                }
            }
        });
    }

    fn if_clause(&mut self, i: &ast::IfClauseCommand) {
        self.compound_list(&i.condition);
        self.compound_list(&i.then);
        for e in i.elses.iter().flatten() {
            if let Some(cond) = &e.condition {
                self.compound_list(cond);
            }
            self.compound_list(&e.body);
        }
    }

    fn function(&mut self, f: &ast::FunctionDefinition) {
        let name = f.fname.value.clone();
        self.functions.push(name.clone());
        self.defining.push(name);
        let saved = self.cwd.clone();
        let mut input = Input::Terminal;
        self.redirects(f.body.1.as_ref(), &mut input);
        self.compound(&f.body.0);
        self.cwd = saved;
        self.defining.pop();
    }

    pub(crate) fn is_function(&self, name: &str) -> bool {
        self.functions.iter().any(|f| f == name)
    }

    fn check_fork_bomb(&mut self, name: &str) {
        let recursive = self.defining.iter().any(|f| f == name);
        if recursive && (self.in_pipe || self.in_background) {
            self.block(format!(
                "fork bomb: function `{name}` calls itself in a background or piped process"
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
            E::UnaryTest(_, w) => {
                self.word(&w.value);
            }
            E::BinaryTest(_, a, b) => {
                self.word(&a.value);
                self.word(&b.value);
            }
        }
    }
}

fn assignment_name(a: &ast::Assignment) -> String {
    match &a.name {
        ast::AssignmentName::VariableName(n) | ast::AssignmentName::ArrayElementName(n, _) => {
            n.clone()
        }
    }
}

/// `2>&1`, `>&-`: duplicating or closing a descriptor writes no file.
fn is_fd_word(arg: &Arg) -> bool {
    arg.lit().is_some_and(|t| {
        t == "-" || (!t.is_empty() && t.trim_end_matches('-').chars().all(|c| c.is_ascii_digit()))
    })
}

/// The first line of a script, cut to 60 characters, for reasons.
pub(crate) fn short(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    let mut out: String = line.chars().take(60).collect();
    if out.len() < line.len() || s.trim().lines().nth(1).is_some() {
        out.push_str("...");
    }
    out
}
