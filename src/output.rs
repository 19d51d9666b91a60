//! The only code that writes to stdout and stderr. Everything written here
//! passes the redaction layer ([`crate::redact::clean`]) first, so no command,
//! console line or error message can print a secret that plangate knows of.
//!
//! `clippy.toml` forbids `std::io::stdout`/`stderr` and `anstream::stdout`/
//! `stderr` everywhere else, and `print!`/`eprint!` are denied crate-wide.
//! stderr goes through anstream, which drops colours when stderr is not a
//! terminal (and honours NO_COLOR / CLICOLOR).

#![allow(clippy::disallowed_methods)]

use std::fmt::Display;
use std::io::Write;

use crate::model::Diagnostic;
use crate::redact;

/// Write `bytes` to stdout (redacted first).
pub(crate) fn stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(&redact::clean(bytes))?;
    out.flush()
}

/// Write `text` to stderr as it is (redacted first). stderr errors are ignored:
/// there is nowhere left to report them.
pub(crate) fn stderr(text: &str) {
    let _ = anstream::stderr()
        .lock()
        .write_all(redact::clean_str(text).as_bytes());
}

/// One line on stderr (a newline is added).
pub(crate) fn line(text: impl Display) {
    stderr(&format!("{text}\n"));
}

/// `plangate: error: …` on stderr.
pub(crate) fn error(msg: impl Display) {
    stderr(&format!("plangate: error: {msg}\n"));
}

/// `plangate: warning: …` on stderr.
pub(crate) fn warning(msg: impl Display) {
    stderr(&format!("plangate: warning: {msg}\n"));
}

/// Plan or usage problems, one per entry, then how many (nothing was executed).
pub(crate) fn diagnostics(diags: &[Diagnostic]) {
    let mut text = String::new();
    for d in diags {
        text.push_str(&format!("{d}\n"));
    }
    text.push_str(&format!(
        "plangate: {} problem(s) found; nothing was executed\n",
        diags.len()
    ));
    stderr(&text);
}
