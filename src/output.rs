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
    out.write_all(&no_legacy_commands(&redact::clean(bytes), on_github()))?;
    out.flush()
}

/// Whether plangate runs under GitHub Actions, whose runner reads commands
/// in what a step prints.
fn on_github() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| crate::environ::var("GITHUB_ACTIONS").is_some_and(|v| v == "true"))
}

/// `text` with every `##[` broken when `github`: the runner acts on its
/// legacy `##[command]data` anywhere in a line (`##[add-mask]`,
/// `##[stop-commands]`, `##[set-output …]`), and a file name, a plan's
/// command or a step's output tail may hold one. plangate writes none of
/// its own. In JSON (the text starts with `{` or `[`) the bracket becomes
/// `\u005b`, in XML `&#91;` (both read back as `[`); elsewhere a word
/// joiner (U+2060, invisible) goes between `##` and `[`. `::` commands need
/// the start of a line, which the console never gives a step's text.
fn no_legacy_commands(text: &[u8], github: bool) -> std::borrow::Cow<'_, [u8]> {
    const NEEDLE: &[u8] = b"##[";
    if !github || memchr::memmem::find(text, NEEDLE).is_none() {
        return std::borrow::Cow::Borrowed(text);
    }
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    let with: &[u8] = match first {
        Some(b'{' | b'[') => b"##\\u005b",
        Some(b'<') => b"##&#91;",
        _ => "##\u{2060}[".as_bytes(),
    };
    let mut out = Vec::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(at) = memchr::memmem::find(rest, NEEDLE) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(with);
        rest = &rest[at + NEEDLE.len()..];
    }
    out.extend_from_slice(rest);
    std::borrow::Cow::Owned(out)
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
    let clean = redact::clean_str(&shown);
    let _ = raw
        .lock()
        .write_all(&no_legacy_commands(clean.as_bytes(), on_github()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_workflow_commands_are_broken_and_json_and_xml_read_back_the_same() {
        let text = b"- `c ##[error]x` added; ##[add-mask]y";
        let out = no_legacy_commands(text, true);
        assert!(memchr::memmem::find(&out, b"##[").is_none());
        assert_eq!(
            String::from_utf8_lossy(&out).replace('\u{2060}', ""),
            String::from_utf8_lossy(text)
        );
        let json = br###"{"path": "##[add-mask]x"}"###;
        let out = no_legacy_commands(json, true);
        let v: serde_json::Value = serde_json::from_slice(&out).expect("still JSON");
        assert_eq!(v["path"], "##[add-mask]x");
        assert!(memchr::memmem::find(&out, b"##[").is_none());
        let xml = b"<a>##[error]x</a>";
        assert_eq!(&*no_legacy_commands(xml, true), b"<a>##&#91;error]x</a>");
        // Off GitHub nothing changes.
        assert_eq!(&*no_legacy_commands(text, false), &text[..]);
    }
}
