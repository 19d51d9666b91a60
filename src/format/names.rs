//! Names a plan file writes that follow a fixed rule (environment variable names).

/// Whether `name` is a portable environment variable name (`[A-Za-z_][A-Za-z0-9_]*`).
pub(crate) fn env_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The environment-variable form of an id or a name (a step id, an input or
/// output name, a matrix expansion's id): upper-cased, every character other
/// than an ASCII letter or digit made `_`, trailing `_` dropped. So
/// `deploy-web` is `DEPLOY_WEB` and `test[os=linux,pkg=core]` is
/// `TEST_OS_LINUX_PKG_CORE`. Two names with the same form are refused where
/// they would meet (at load time, or when the step's environment is built).
pub(crate) fn env_key(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    while s.ends_with('_') && s.len() > 1 {
        s.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::env_key;

    #[test]
    fn env_keys_are_upper_case_with_underscores_and_no_trailing_one() {
        for (name, key) in [
            ("fix", "FIX"),
            ("deploy-web", "DEPLOY_WEB"),
            ("ask[package=core]", "ASK_PACKAGE_CORE"),
            ("t[arch=x86_64,os=linux]", "T_ARCH_X86_64_OS_LINUX"),
            ("v[n=1.2]", "V_N_1_2"),
            ("a--b", "A__B"),
        ] {
            assert_eq!(env_key(name), key, "{name}");
        }
    }
}
