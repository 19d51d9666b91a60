//! The only code that writes to stdout and stderr. Everything written here
//! passes the redaction layer ([`crate::redact::clean`]) first, so no command,
//! console line or error message can print a secret that plangate knows of.
//!
//! `clippy.toml` forbids `std::io::stdout`/`stderr` and `anstream::stdout`/
//! `stderr` everywhere else, and `print!`/`eprint!` are denied crate-wide.
//! stderr gets colours only when anstream would keep them (a terminal, and
//! NO_COLOR / CLICOLOR); otherwise they are stripped before redaction.

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
///
/// When stderr gets no colours (not a terminal, NO_COLOR), escape sequences
/// and control bytes are stripped *before* redaction, and the result is
/// written as it is: stripping after redaction would join the pieces of a
/// secret that control bytes split. With colours the text is written as
/// redacted; the redaction layer already scans it as a terminal shows it.
pub(crate) fn stderr(text: &str) {
    let raw = std::io::stderr();
    let shown = if anstream::AutoStream::choice(&raw) == anstream::ColorChoice::Never {
        std::borrow::Cow::Owned(anstream::adapter::strip_str(text).to_string())
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    let _ = raw.lock().write_all(redact::clean_str(&shown).as_bytes());
}

/// The text of a panic's payload (a `&str` or `String`; other payloads say so).
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_owned())
}

/// Replace Rust's default panic message (written raw to stderr, where a
/// secret in it would show) with one line through the redaction layer:
/// `plangate: internal error (a bug): MESSAGE at FILE:LINE`. The hook may
/// run while this thread holds a lock of the redaction layer, so it never
/// waits on one ([`redact::clean_in_panic`]); when it cannot redact, the
/// message is withheld. Where the panic is caught decides the exit code and
/// the report ([`crate::run`], `commands::run`).
pub(crate) fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let place = info
            .location()
            .map_or_else(String::new, |l| format!(" at {}:{}", l.file(), l.line()));
        let text = format!(
            "plangate: internal error (a bug, please report it): {}{place}\n",
            panic_text(info.payload())
        );
        let shown = anstream::adapter::strip_str(&text).to_string();
        let line = redact::clean_in_panic(&shown).unwrap_or_else(|| {
            format!("plangate: internal error (a bug, please report it){place}; its message is withheld: the redaction layer was busy\n")
        });
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }));
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
