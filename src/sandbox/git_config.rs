//! Reading git configuration files as text, for the guards that judge
//! them: the keys ([`config_keys`]) and their values ([`config_entries`]).
//! What plangate cannot read exactly as git would (continued lines, a key
//! before any section...) is refused, so that its callers fail closed.

/// The keys of a git configuration file (`section.key`, or
/// `section.subsection.key`; section and key in lower case), or None when
/// the text is not configuration plangate can read (fail-closed: risky):
/// continuation lines, a key before any section, a malformed header.
pub(crate) fn config_keys(text: &str) -> Option<Vec<String>> {
    Some(config_entries(text)?.into_iter().map(|(k, _)| k).collect())
}

/// The entries of a git configuration file: each key (as
/// [`config_keys`]) with its value as git reads it (quotes and escapes
/// undone, comments and surrounding blanks dropped; a key without `=` has
/// an empty value). None when plangate cannot read it (see [`config_keys`]).
pub(crate) fn config_entries(text: &str) -> Option<Vec<(String, String)>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\0') {
        return None;
    }
    let mut keys = Vec::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        if line.trim_end().ends_with('\\') {
            return None;
        }
        let mut rest = line.trim_start();
        if rest.starts_with('[') {
            let (name, after) = header(rest)?;
            section = Some(name);
            rest = after.trim_start();
        }
        if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(rest.len());
        let key = &rest[..end];
        if !key.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return None;
        }
        let after = rest[end..].trim_start();
        let value = if let Some(v) = after.strip_prefix('=') {
            value(v)?
        } else if after.is_empty() || after.starts_with('#') || after.starts_with(';') {
            String::new()
        } else {
            return None;
        };
        keys.push((
            format!("{}.{}", section.as_ref()?, key.to_ascii_lowercase()),
            value,
        ));
    }
    Some(keys)
}

/// A value as git reads it from what follows `=` on its line: blanks
/// outside quotes around it dropped (each inside kept as a space), quotes
/// and `\\`, `\"`, `\n`, `\t`, `\b` undone, a `#` or `;` outside quotes
/// ending it. None for an unknown escape or an unclosed quote (git refuses
/// them).
fn value(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut quoted = false;
    let mut spaces = 0usize;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c.is_whitespace() && !quoted {
            if !out.is_empty() {
                spaces += 1;
            }
            continue;
        }
        if !quoted && (c == '#' || c == ';') {
            break;
        }
        out.extend(std::iter::repeat_n(' ', spaces));
        spaces = 0;
        match c {
            '"' => quoted = !quoted,
            '\\' => out.push(match chars.next()? {
                'n' => '\n',
                't' => '\t',
                'b' => '\u{8}',
                c @ ('"' | '\\') => c,
                _ => return None,
            }),
            c => out.push(c),
        }
    }
    (!quoted).then_some(out)
}

/// A section header at the start of `line`: its name (`section` or
/// `section.subsection`) and what follows the `]`.
fn header(line: &str) -> Option<(String, &str)> {
    let inner = line.strip_prefix('[')?;
    let name_end = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
        .unwrap_or(inner.len());
    let name = inner[..name_end].to_ascii_lowercase();
    if name.is_empty() {
        return None;
    }
    let rest = &inner[name_end..];
    if let Some(after) = rest.strip_prefix(']') {
        // `[section.subsection]`: the old form, subsection in lower case.
        return Some((name, after));
    }
    let quoted = rest.strip_prefix(' ')?.trim_start().strip_prefix('"')?;
    let mut sub = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => sub.push(chars.next()?.1),
            '"' => {
                let after = quoted[i + 1..].strip_prefix(']')?;
                return Some((format!("{name}.{sub}"), after));
            }
            _ => sub.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_keys_are_read_or_refused() {
        let init = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
        assert_eq!(
            config_keys(init).expect("keys"),
            [
                "core.repositoryformatversion",
                "core.filemode",
                "core.bare",
                "core.logallrefupdates"
            ]
        );
        assert_eq!(
            config_keys("[remote \"or\\\"ig\"]\n url = x # c\n[Core]FSMonitor=x\n; c\n")
                .expect("keys"),
            ["remote.or\"ig.url", "core.fsmonitor"]
        );
        assert_eq!(
            config_keys("[includeIf \"gitdir:/x\"]\n path = y\n").expect("keys"),
            ["includeif.gitdir:/x.path"]
        );
        assert_eq!(config_keys("[a.B]\nk\n").expect("keys"), ["a.b.k"]);
        for bad in [
            "key = x\n",
            "[core\nk = v\n",
            "[core]\nk = a\\\n b\n",
            "[core]\n=x\n",
            "[core]\nk x\n",
            "[core \"x]\nk = v\n",
            "[]\n",
            "[core]\0\n",
        ] {
            assert_eq!(config_keys(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn values_are_read_as_git_reads_them() {
        let text = "[include]\n\tpath = \"../a b.cfg\" ; c\n\tpath=x  y # z\n[a]\n\tk = \"q\\\"t\\\\\"\n\tflag\n";
        assert_eq!(
            config_entries(text).expect("entries"),
            [
                ("include.path".to_owned(), "../a b.cfg".to_owned()),
                ("include.path".to_owned(), "x  y".to_owned()),
                ("a.k".to_owned(), "q\"t\\".to_owned()),
                ("a.flag".to_owned(), String::new()),
            ]
        );
        assert_eq!(config_entries("[a]\nk = \"open\n"), None);
        assert_eq!(config_entries("[a]\nk = \\q\n"), None);
    }
}
