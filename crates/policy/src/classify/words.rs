//! Turns one shell word into its static value when it has one: quotes and
//! escapes removed, `~`/`$HOME` replaced; anything decided at run time makes
//! it unknown. Command substitutions are returned, to classify as scripts.

use brush_parser::word::{Parameter, ParameterExpr, TildeExpr, WordPiece, WordPieceWithSource};

/// One argument after static expansion.
#[derive(Clone, Debug, Default)]
pub(super) struct Arg {
    /// The value, or None when it depends on run time.
    pub text: Option<String>,
    /// Byte index in `text` of the first unquoted glob character, if any.
    pub glob_at: Option<usize>,
    /// The word as written, for reasons.
    pub raw: String,
    /// The word is a process substitution (`<(...)`).
    pub procsub: bool,
    /// Set when the word is a step-private folder (`$PLANGATE_STEP_ARTIFACTS`,
    /// `"${TMPDIR}"/x`, ...) followed by a static rest; `text` is then None.
    pub scratch: Option<Scratch>,
}

/// A step-private folder plangate makes writable at every sandbox level and
/// names in a variable it sets itself: the variable and what the folder is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ScratchVar(&'static str, &'static str);

impl ScratchVar {
    /// Every step-private variable.
    pub(super) const ALL: [ScratchVar; 2] = [
        ScratchVar("PLANGATE_STEP_ARTIFACTS", "the step's artifact folder"),
        ScratchVar("TMPDIR", "the step's private temporary folder"),
    ];

    pub(super) fn name(self) -> &'static str {
        self.0
    }

    /// What the folder is, for reasons.
    pub(super) fn describe(self) -> String {
        format!("{} (${})", self.1, self.0)
    }

    fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// A word that starts with a step-private folder's variable.
#[derive(Clone, Debug)]
pub(super) struct Scratch {
    pub var: ScratchVar,
    /// What follows the variable (empty, or starting with `/` for a path inside it).
    pub rest: String,
    /// Byte index in `rest` of the first unquoted glob character, if any.
    pub glob_at: Option<usize>,
}

/// Whether `text` names a step-private folder's variable as a whole word
/// (`TMPDIR=`, `unset TMPDIR`, `${TMPDIR:=x}`), anywhere but a plain
/// expansion (`$TMPDIR`, `${TMPDIR}`): a script that may change the
/// variable's value cannot rely on it.
pub(super) fn mentions_scratch_var(text: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    ScratchVar::ALL.iter().any(|v| {
        let name = v.name();
        text.match_indices(name).any(|(i, _)| {
            let before = &text[..i];
            let after = &text[i + name.len()..];
            let part = before.ends_with(ident) || after.starts_with(ident);
            let plain = (before.ends_with('$') && !before.ends_with("\\$"))
                || (before.ends_with("${") && after.starts_with('}'));
            !part && !plain
        })
    })
}

/// Whether `s` is a variable name (`[A-Za-z_][A-Za-z0-9_]*`).
pub(super) fn is_name(s: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    !s.starts_with(|c: char| c.is_ascii_digit()) && !s.is_empty() && s.chars().all(ident)
}

impl Arg {
    /// An argument whose value is not known (xargs input, `{}` of find, ...).
    pub(super) fn unknown(raw: &str) -> Self {
        Self {
            raw: raw.to_string(),
            ..Self::default()
        }
    }

    /// A literal argument (a value taken out of another word, like `--git-dir=x`).
    pub(super) fn literal(text: &str) -> Self {
        Self {
            text: Some(text.to_string()),
            raw: text.to_string(),
            ..Self::default()
        }
    }

    pub(super) fn lit(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// True when the value is known and equals `s`.
    pub(super) fn is(&self, s: &str) -> bool {
        self.lit() == Some(s)
    }
}

/// The result of evaluating one word.
#[derive(Debug, Default)]
pub(super) struct WordEval {
    pub arg: Arg,
    /// Scripts of command substitutions found in the word, to classify.
    pub scripts: Vec<String>,
    /// Why the word could not be read, if it could not.
    pub problem: Option<String>,
}

/// The folders `~+`/`$PWD` and `~-`/`$OLDPWD` expand to, when the walker
/// passes them (only where that is worse than an unknown path: the script
/// may assign either variable).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Dirs<'a> {
    pub pwd: Option<&'a str>,
    pub oldpwd: Option<&'a str>,
    /// `~root` is `/root`.
    pub root_home: bool,
}

/// Evaluates `raw` statically; `home` replaces `~` and `$HOME`.
pub(super) fn eval_word(raw: &str, home: Option<&str>) -> WordEval {
    evaluate(raw, home, Dirs::default(), false)
}

/// Runs a brush-parser call: a panic there (it has a few on hostile input;
/// fuzzing found `333…3>d)`, an fd number that overflows) means "cannot read it".
pub(super) fn parse_guarded<T, E: std::fmt::Display>(
    parse: impl FnOnce(&brush_parser::ParserOptions) -> Result<T, E>,
) -> Result<T, String> {
    let options = brush_parser::ParserOptions::default();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parse(&options))) {
        Ok(parsed) => parsed.map_err(|e| e.to_string()),
        Err(_) => Err("the shell parser failed on it".to_owned()),
    }
}

/// Evaluates a word, or a here-document body that undergoes expansion (for
/// its substitutions), with `~+`, `$PWD`, `~-` and `$OLDPWD` replaced by `dirs`.
pub(super) fn evaluate(raw: &str, home: Option<&str>, dirs: Dirs<'_>, heredoc: bool) -> WordEval {
    let mut b = Builder {
        raw,
        home,
        dirs,
        known: true,
        ..Builder::default()
    };
    let parsed = parse_guarded(|options| {
        if heredoc {
            brush_parser::word::parse_heredoc(raw, options)
        } else {
            brush_parser::word::parse(raw, options)
        }
    });
    match parsed {
        Ok(pieces) => b.pieces(&pieces, heredoc),
        Err(e) if heredoc => b.out.problem = Some(format!("cannot read a here-document: {e}")),
        Err(e) => b.out.problem = Some(format!("cannot read the word `{raw}`: {e}")),
    }
    b.finish()
}

#[derive(Default)]
struct Builder<'a> {
    raw: &'a str,
    home: Option<&'a str>,
    dirs: Dirs<'a>,
    text: String,
    known: bool,
    glob_at: Option<usize>,
    /// A step-private folder's variable opened the word.
    scratch: Option<ScratchVar>,
    out: WordEval,
}

impl Builder<'_> {
    fn finish(mut self) -> WordEval {
        let scratch = match self.scratch {
            Some(var) if self.known => Some(Scratch {
                var,
                rest: std::mem::take(&mut self.text),
                glob_at: self.glob_at.take(),
            }),
            _ => None,
        };
        self.out.arg = Arg {
            text: (self.known && scratch.is_none()).then_some(self.text),
            glob_at: self.glob_at,
            raw: self.raw.to_string(),
            procsub: false,
            scratch,
        };
        self.out
    }

    fn pieces(&mut self, pieces: &[WordPieceWithSource], quoted: bool) {
        for p in pieces {
            self.piece(p, quoted);
        }
    }

    fn piece(&mut self, p: &WordPieceWithSource, quoted: bool) {
        match &p.piece {
            WordPiece::Text(s) => {
                if !quoted {
                    self.glob_at = self.glob_at.or(glob_index(s).map(|i| self.text.len() + i));
                }
                self.text.push_str(s);
            }
            WordPiece::SingleQuotedText(s) => self.text.push_str(s),
            WordPiece::AnsiCQuotedText(s) => match decode_ansi_c(s) {
                Some(d) => self.text.push_str(&d),
                None => self.known = false,
            },
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => self.pieces(inner, true),
            WordPiece::TildeExpansion(t) => match t {
                TildeExpr::Home => self.home,
                TildeExpr::WorkingDir => self.dirs.pwd,
                TildeExpr::OldWorkingDir => self.dirs.oldpwd,
                // root's home (when the caller asks: see `Dirs`).
                TildeExpr::UserHome(u) if u == "root" && self.dirs.root_home => Some("/root"),
                _ => None,
            }
            .map_or_else(|| self.known = false, |d| self.text.push_str(d)),
            WordPiece::ParameterExpansion(expr) => self.parameter(expr, p),
            WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                self.known = false;
                self.out.scripts.push(s.clone());
            }
            WordPiece::EscapeSequence(s) => self.text.push_str(s.strip_prefix('\\').unwrap_or(s)),
            WordPiece::ArithmeticExpression(e) => {
                self.known = false;
                self.cannot_follow(&e.value, arithmetic_problem(&e.value));
            }
        }
    }

    fn parameter(&mut self, expr: &ParameterExpr, p: &WordPieceWithSource) {
        if let ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        } = expr
        {
            let dir = match name.as_str() {
                "HOME" => self.home,
                "PWD" => self.dirs.pwd,
                "OLDPWD" => self.dirs.oldpwd,
                _ => None,
            };
            if let Some(dir) = dir {
                return self.text.push_str(dir);
            }
            // `$TMPDIR`, `"${PLANGATE_STEP_ARTIFACTS}"`: plangate's own
            // folder, when nothing was written before it.
            if let Some(var) = ScratchVar::named(name)
                && self.known
                && self.text.is_empty()
                && self.scratch.is_none()
                && self.glob_at.is_none()
            {
                self.scratch = Some(var);
                return;
            }
        }
        self.known = false;
        let source = self.raw.get(p.start_index..p.end_index).unwrap_or(self.raw);
        self.cannot_follow(source, expansion_problem(source));
    }

    /// Keeps the first problem: a command substitution nested in an
    /// expansion (we cannot extract it precisely), else `why`.
    fn cannot_follow(&mut self, source: &str, why: Option<String>) {
        let nested = source.contains("$(") || source.contains('`') || source.contains("<(");
        let nested = nested
            .then(|| format!("command substitution nested inside an expansion in `{source}`"));
        if let Some(p) = nested.or(why) {
            self.out.problem.get_or_insert(p);
        }
    }
}

/// True when `text` holds an array subscript (`name[...]`) whose index holds
/// an expansion (`$`, a backquote): bash evaluates such an index as arithmetic
/// and expands what it finds there again, so a value like `a[$(cmd)]` runs `cmd`.
pub(super) fn subscript_expands(text: &str) -> bool {
    let index = |after: &str| {
        after
            .split(']')
            .next()
            .is_some_and(|i| i.contains(['$', '`']))
    };
    text.split('[').skip(1).any(index)
}

/// True when arithmetic evaluation of `text` (`(( ))`, `let`, `-eq`, `-v`)
/// may run a command it does not show: an index holding an expansion, or a
/// command's output, which bash evaluates again (`a[$(cmd)]` runs `cmd`).
pub(super) fn evaluated_again(text: &str) -> bool {
    subscript_expands(text) || text.contains("$(") || text.contains('`')
}

/// The comparisons that read their operands as arithmetic (`test`, `[[ ]]`).
pub(super) const ARITH_OPS: [&str; 6] = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// Why an arithmetic expression cannot be followed, if it cannot.
pub(super) fn arithmetic_problem(expr: &str) -> Option<String> {
    evaluated_again(expr).then(|| {
        format!(
            "arithmetic `{expr}` evaluates an array index holding an expansion, or a command's output, again (it can run commands)"
        )
    })
}

/// Why a parameter expansion cannot be followed: prompt expansion (`${x@P}`)
/// and indirection (`${!x}`) evaluate the variable's value; an array index
/// holding an expansion is evaluated twice.
fn expansion_problem(source: &str) -> Option<String> {
    let inner = source.strip_prefix("${")?.strip_suffix('}')?;
    if inner.ends_with("@P") {
        return Some(format!(
            "`{source}` applies prompt expansion, which runs command substitutions held in the value"
        ));
    }
    // `${!prefix*}`, `${!name[@]}` list names or keys: not indirection.
    let lists = ["*", "@", "[@]", "[*]"];
    let indirect = inner
        .strip_prefix('!')
        .is_some_and(|n| !n.is_empty() && !lists.iter().any(|l| n.ends_with(l)));
    if indirect {
        return Some(format!(
            "`{source}` expands a variable named by another one (it can run commands)"
        ));
    }
    subscript_expands(inner).then(|| {
        format!("`{source}` indexes an array with an expansion, which bash evaluates again")
    })
}

/// Index of the first glob (or brace-expansion) character in unquoted text.
fn glob_index(s: &str) -> Option<usize> {
    let hit = |&(i, c): &(usize, char)| {
        let rest = s.get(i + 1..).unwrap_or("");
        match c {
            '*' | '?' => true,
            '[' => rest.contains(']'),
            '{' => rest.contains('}') && (rest.contains(',') || rest.contains("..")),
            _ => false,
        }
    };
    s.char_indices().find(hit).map(|(i, _)| i)
}

/// Decodes the body of `$'...'`; None when an escape is not understood.
fn decode_ansi_c(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        out.push(match e {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'a' => '\x07',
            'b' => '\x08',
            'e' | 'E' => '\x1b',
            'f' => '\x0c',
            'v' => '\x0b',
            '\\' | '\'' | '"' | '?' => e,
            // `\xHH` (1 or 2 digits), `\OOO` (1 to 3 octal digits).
            'x' | '0'..='7' => {
                let (radix, max) = if e == 'x' { (16, 2) } else { (8, 3) };
                // An octal escape's first digit is `e` itself.
                let mut digits: String = e.to_digit(8).map(|_| e).into_iter().collect();
                while digits.len() < max
                    && let Some(d) = chars.next_if(|d| d.is_digit(radix))
                {
                    digits.push(d);
                }
                char::from_u32(u32::from_str_radix(&digits, radix).ok()?)?
            }
            _ => return None,
        });
    }
    Some(out)
}

#[cfg(test)]
#[path = "words_tests.rs"]
mod tests;
