//! Data evaluated as arithmetic. Bash evaluates a variable named in
//! arithmetic (`(( n ))`, `$(( n + 1 ))`, `$[ n ]`, `[[ n -eq 1 ]]`, `let`,
//! an index `${a[n]}`, an offset `${s:n}`, a value assigned to a `declare -i`
//! variable) as an expression in turn, and an array index inside that value
//! is expanded again: after `n=$(cat f)`, `(( n ))` runs the `a[$(cmd)]` the
//! file holds. A name that holds data (a command's output, input `read`, a
//! loop over words not written out, an array, a step's output) and is named
//! in arithmetic anywhere in the script makes it unclassifiable. The order
//! is not followed: a function or a loop evaluates later what is assigned
//! after it. A variable the script never assigns (the environment) is the
//! plan's own value, except the outputs of earlier steps.

use super::words::Arg;

/// What the walk saw of names and arithmetic.
#[derive(Default)]
pub(super) struct Arith {
    /// Each value assigned: the names it refers to; None for data.
    values: Vec<(String, Option<Vec<String>>)>,
    /// Names arithmetic evaluates.
    evaluated: Vec<String>,
    /// Variables declared integer: every value assigned to them is arithmetic.
    integers: Vec<String>,
    /// Names given a literal value that holds code (`'a[$(cmd)]'`).
    code: Vec<String>,
}

/// Whether a literal value holds a command bash would run when it is
/// evaluated as arithmetic (`a[$(cmd)]`, `` a[`cmd`] ``).
fn holds_code(v: &str) -> bool {
    v.contains("$(") || v.contains('`')
}

/// Names that hold data without an assignment in the script: what `read`
/// and `mapfile` fill by default, and the outputs of earlier steps.
fn data_by_default(name: &str) -> bool {
    matches!(name, "REPLY" | "MAPFILE") || name.starts_with("PLANGATE_OUTPUT")
}

/// The names (`[A-Za-z_][A-Za-z0-9_]*`) in `text`, outside numbers (`0x1f`).
fn names_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut number = false;
    for c in text.chars().chain([' ']) {
        if c.is_ascii_alphanumeric() || c == '_' {
            if word.is_empty() && !number && c.is_ascii_digit() {
                number = true;
            }
            if !number {
                word.push(c);
            }
        } else {
            number = false;
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        }
    }
    out
}

/// The parts of a word bash evaluates as arithmetic: `$(( ))`, `$[ ]`, and
/// the index or offset of a parameter expansion (`${a[i]}`, `${s:i:n}`),
/// each to the end of its expansion (or of the word: more, never less).
fn arithmetic_parts(raw: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for (i, _) in raw.match_indices('$') {
        let rest = &raw[i + 1..];
        if let Some(inner) = rest.strip_prefix("((").or_else(|| rest.strip_prefix('[')) {
            parts.push(inner);
        } else if let Some(inner) = rest.strip_prefix('{') {
            let inner = inner.trim_start_matches(['#', '!']);
            let name_end = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len());
            let after = &inner[name_end..];
            let end = after.find('}').unwrap_or(after.len());
            let part = &after[..end];
            let offset = part.starts_with(':') && !part[1..].starts_with(['-', '=', '?', '+']);
            if part.starts_with('[') || offset {
                parts.push(part);
            }
        }
    }
    parts
}

impl Arith {
    /// `name=value` (also `declare`, `export`, `VAR=x cmd`).
    pub(super) fn assign(&mut self, name: &str, value: &Arg) {
        // `a[i]=v`: the index of an indexed array is arithmetic.
        let name = match name.split_once('[') {
            Some((base, index)) => {
                self.evaluates(index);
                base
            }
            None => name,
        };
        if value.lit().is_some_and(holds_code) {
            self.code.push(name.to_string());
        }
        let refs = match value.lit() {
            Some(v) if !v.contains(['[', '$', '`']) => Some(names_in(v)),
            Some(_) => None,
            // An arithmetic result is a number (its names are judged where it is).
            None if integer_result(&value.raw) => Some(Vec::new()),
            None => plain_reference(&value.raw).map(|n| vec![n.to_string()]),
        };
        self.values.push((name.to_string(), refs));
    }

    /// `name` holds data (`read`, `mapfile`, `printf -v`, an array).
    pub(super) fn data(&mut self, name: &str) {
        self.values.push((name.to_string(), None));
    }

    /// `for name in items`: data unless every item is written out.
    pub(super) fn items(&mut self, name: &str, items: &[Arg]) {
        if items.iter().any(|a| a.lit().is_some_and(holds_code)) {
            self.code.push(name.to_string());
        }
        let plain = |a: &Arg| a.lit().is_some_and(|v| !v.contains(['[', '$', '`']));
        let written = items.iter().all(plain);
        let refs = written.then(|| items.iter().flat_map(|a| names_in(&a.raw)).collect());
        self.values.push((name.to_string(), refs));
    }

    /// `declare -i name`.
    pub(super) fn integer(&mut self, name: &str) {
        self.integers.push(name.to_string());
    }

    /// Arithmetic evaluates `expr` (every name in it).
    pub(super) fn evaluates(&mut self, expr: &str) {
        self.evaluated.extend(names_in(expr));
    }

    /// A word: the arithmetic inside it (`$(( ))`, `${a[i]}`, ...).
    pub(super) fn word(&mut self, raw: &str) {
        for part in arithmetic_parts(raw) {
            self.evaluates(part);
        }
    }

    /// `found` and the names given a value that `holds` (knowing the names
    /// found so far), to a fixed point.
    fn spread<'a>(
        &'a self,
        mut found: Vec<&'a str>,
        holds: impl Fn(&Option<Vec<String>>, &[&str]) -> bool,
    ) -> Vec<&'a str> {
        loop {
            let before = found.len();
            for (name, refs) in &self.values {
                if holds(refs, &found) && !found.contains(&name.as_str()) {
                    found.push(name);
                }
            }
            if found.len() == before {
                return found;
            }
        }
    }

    /// Why the script evaluates data as arithmetic, if it does, and whether
    /// that data is a literal holding code (else it is only known at run
    /// time: harmless where the step may only read).
    pub(super) fn problem(&self) -> Option<(String, bool)> {
        // Code flows through names that refer to it (`m=$x`), as data does.
        let code = self.spread(
            self.code.iter().map(String::as_str).collect(),
            |refs, code| refs.iter().flatten().any(|n| code.contains(&n.as_str())),
        );
        let is_data = |n: &str, data: &[&str]| {
            data.contains(&n) || (data_by_default(n) && !self.values.iter().any(|(m, _)| m == n))
        };
        let data = self.spread(Vec::new(), |refs, data| {
            (refs.as_ref()).is_none_or(|r| r.iter().any(|n| is_data(n, data)))
        });
        let integer_data = self.integers.iter().find(|n| is_data(n, &data));
        if let Some(n) = integer_data {
            return Some((
                format!(
                    "integer variable `{n}` is given data only known at run time, which bash evaluates as arithmetic (an index `a[$(cmd)]` in it runs cmd)"
                ),
                code.contains(&n.as_str()),
            ));
        }
        // The values given to integer variables are evaluated too.
        let integer_values = (self.values.iter())
            .filter(|(n, _)| self.integers.contains(n))
            .flat_map(|(_, refs)| refs.iter().flatten());
        let mut evaluated = self.evaluated.iter().chain(integer_values);
        evaluated.find(|n| is_data(n, &data)).map(|n| {
            let why = format!(
                "`{n}` is evaluated as arithmetic and holds data only known at run time (a command's output or input); bash evaluates an index in it again (`a[$(cmd)]` runs cmd)"
            );
            (why, code.contains(&n.as_str()))
        })
    }
}

/// Whether `raw` is one `$(( ... ))` or `$[ ... ]`, whose value is a number.
fn integer_result(raw: &str) -> bool {
    let r = raw.trim_matches('"');
    let one = |open: &str, close: &str| {
        (r.strip_prefix(open).and_then(|r| r.strip_suffix(close)))
            .is_some_and(|i| !i.contains(close))
    };
    one("$((", "))") || one("$[", "]")
}

/// `NAME` when `raw` is only `$NAME`, `${NAME}` or `"$NAME"`.
fn plain_reference(raw: &str) -> Option<&str> {
    let r = raw.trim_matches('"').strip_prefix('$')?;
    let r = r
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(r);
    super::words::is_name(r).then_some(r)
}
