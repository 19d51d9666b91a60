//! Step outputs: the `$PLANGATE_OUTPUT` file of a bash step (GitHub's
//! `$GITHUB_OUTPUT` syntax) and the accepted values of an agent step.
//!
//! The file holds `name=value` lines and `name<<DELIMITER` blocks ended by a
//! line holding only the delimiter. It is read strictly: any other line, a
//! block never closed, a bad name, two names with one variable, a value over
//! [`MAX_VALUE_BYTES`] or a file over [`MAX_FILE_BYTES`] fails the step,
//! with the line. Empty lines are ignored; a name given twice keeps its last
//! value. Values reach dependents only as environment variables.

use std::collections::BTreeMap;
use std::path::Path;

use crate::format::names::env_key;
use crate::tools::params::agent::OutputKind;

/// The file's name in the step's artifact folder.
pub(crate) const FILE_NAME: &str = "outputs.txt";
/// Most bytes of one output value.
pub(crate) const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Most bytes of a step's output file.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Output names: a letter or `_`, then letters, digits, `_` or `-`; 64 at most.
pub(crate) fn name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Why an output file was refused: the line (1-based; 0 for the whole file) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutputError {
    /// 1-based line; 0 for the file as a whole.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "$PLANGATE_OUTPUT: {}", self.message)
        } else {
            write!(f, "$PLANGATE_OUTPUT line {}: {}", self.line, self.message)
        }
    }
}

fn err(line: usize, message: impl Into<String>) -> OutputError {
    OutputError {
        line,
        message: message.into(),
    }
}

/// Parse an output file's text (pure).
pub(crate) fn parse(text: &str) -> Result<BTreeMap<String, String>, OutputError> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut keys: BTreeMap<String, String> = BTreeMap::new();
    let mut lines = text.split('\n').enumerate().peekable();
    while let Some((i, raw)) = lines.next() {
        let n = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.is_empty() {
            continue;
        }
        let (name, value) = if let Some((name, delim)) = heredoc(line) {
            if delim.is_empty() {
                return Err(err(n, format!("`{name}<<` has no delimiter")));
            }
            let mut body: Vec<&str> = Vec::new();
            let mut closed = false;
            for (_, raw) in lines.by_ref() {
                let l = raw.strip_suffix('\r').unwrap_or(raw);
                if l == delim {
                    closed = true;
                    break;
                }
                body.push(l);
            }
            if !closed {
                return Err(err(
                    n,
                    format!("the block `{name}<<{delim}` is never closed by a line `{delim}`"),
                ));
            }
            (name, body.join("\n"))
        } else if let Some((name, value)) = line.split_once('=') {
            (name, value.to_owned())
        } else {
            return Err(err(
                n,
                "expected `name=value` or `name<<DELIMITER` (a value of several lines)",
            ));
        };
        if !name_ok(name) {
            return Err(err(
                n,
                format!(
                    "invalid output name `{}`: a letter or `_`, then letters, digits, `_` or `-` (64 at most)",
                    crate::redact::cut(name, 80)
                ),
            ));
        }
        if let Some(at) = value.find('\0') {
            return Err(err(n, nul_message(name, at)));
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(err(
                n,
                format!(
                    "output `{name}` is {} bytes, more than the {MAX_VALUE_BYTES} an output may hold; write large data to a file",
                    value.len()
                ),
            ));
        }
        let key = env_key(name);
        if let Some(other) = keys.get(&key).filter(|o| o.as_str() != name) {
            return Err(err(
                n,
                format!("outputs `{other}` and `{name}` would both be the variable suffix `{key}`"),
            ));
        }
        keys.insert(key, name.to_owned());
        out.insert(name.to_owned(), value);
    }
    Ok(out)
}

/// Why an output value holding a NUL byte at byte offset `at` is refused:
/// it could never reach a dependent, whose environment is C strings.
pub(crate) fn nul_message(name: &str, at: usize) -> String {
    format!("output `{name}` holds a NUL byte at offset {at}: outputs are text")
}

/// `name<<DELIM` (the name before the first `<<`, when it comes before any `=`).
fn heredoc(line: &str) -> Option<(&str, &str)> {
    let at = line.find("<<")?;
    if line.find('=').is_some_and(|eq| eq < at) {
        return None;
    }
    Some((&line[..at], &line[at + 2..]))
}

/// Read and parse a bash step's output file (absent: no outputs).
pub(crate) fn read(path: &Path) -> Result<BTreeMap<String, String>, OutputError> {
    use std::io::Read;
    // A FIFO or device in its place is refused at once (never a hang); a
    // link is refused too (plangate would read where it points, as itself).
    let f = match crate::regular::open_no_link(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(err(0, format!("cannot read the file: {e}"))),
    };
    let mut buf = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| err(0, format!("cannot read the file: {e}")))?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(err(
            0,
            format!("the file is larger than the {MAX_FILE_BYTES} bytes a step's outputs may take"),
        ));
    }
    let text = String::from_utf8(buf).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        err(line, "not valid UTF-8")
    })?;
    parse(&text)
}

/// The outputs an agent step's accepted value gives: `result` (the code
/// block, or the JSON value as compact text) or, for an envelope, `status`
/// and `summary`. A value over [`MAX_VALUE_BYTES`] is left out (the whole
/// value stays in `$PLANGATE_RESULT_<ID>`).
pub(crate) fn of_agent(kind: OutputKind, result_file: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(text) = crate::regular::read_to_string(result_file) else {
        return out;
    };
    match kind {
        OutputKind::Code => {
            out.insert("result".to_owned(), text);
        }
        OutputKind::Json => {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                out.insert("result".to_owned(), v.to_string());
            }
        }
        OutputKind::Envelope => {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                for key in ["status", "summary"] {
                    if let Some(s) = v.get(key).and_then(serde_json::Value::as_str) {
                        out.insert(key.to_owned(), s.to_owned());
                    }
                }
            }
        }
    }
    out.retain(|_, v| v.len() <= MAX_VALUE_BYTES);
    out
}

/// The outputs an agent step of this kind sets (for load-time checks).
pub(crate) fn agent_names(kind: OutputKind) -> &'static [&'static str] {
    match kind {
        OutputKind::Code | OutputKind::Json => &["result"],
        OutputKind::Envelope => &["status", "summary"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_blocks_are_read() {
        let text = "a=1\n\nb=x=y\nnotes<<EOF\nline 1\n\nline 3\nEOF\nc=\r\na=2\n";
        let v = parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v["a"], "2");
        assert_eq!(v["b"], "x=y");
        assert_eq!(v["notes"], "line 1\n\nline 3");
        assert_eq!(v["c"], "");
        assert_eq!(v.len(), 4);
        let v = parse("k=a<<b\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v["k"], "a<<b");
    }

    #[test]
    fn malformed_files_name_the_line() {
        for (text, line, what) in [
            ("a=1\njust text\n", 2, "expected `name=value`"),
            ("a=1\nb<<END\nx\n", 2, "never closed"),
            ("1a=x\n", 1, "invalid output name"),
            ("a-b=1\na_b=2\n", 2, "would both be"),
            ("x<<\n", 1, "no delimiter"),
            ("=v\n", 1, "invalid output name"),
        ] {
            let e = parse(text)
                .err()
                .unwrap_or_else(|| panic!("accepted {text:?}"));
            assert_eq!(e.line, line, "{text:?}");
            assert!(e.message.contains(what), "{text:?}: {}", e.message);
        }
        let big = format!("v={}\n", "x".repeat(MAX_VALUE_BYTES + 1));
        assert!(
            parse(&big)
                .err()
                .is_some_and(|e| e.message.contains("more than"))
        );
    }
}
