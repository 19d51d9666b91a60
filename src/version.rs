//! The version plangate reports about itself: the package version with the
//! commit it was built from as semver build metadata (`0.1.0+1a2b3c4d5e6f`),
//! or the bare package version when the commit is unknown (see `build.rs`).
//! `--version`, every report's `plangate_version`, SARIF's `semanticVersion`,
//! and the GitLab report's scanner version all use it.

/// `0.1.0+1a2b3c4d5e6f`, or `0.1.0` when built without a known commit.
pub(crate) const VERSION: &str = env!("PLANGATE_FULL_VERSION");

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_is_the_package_version_with_the_commit_when_known() {
        let v = super::VERSION;
        match v.split_once('+') {
            None => assert_eq!(v, env!("CARGO_PKG_VERSION")),
            Some((pkg, commit)) => {
                assert_eq!(pkg, env!("CARGO_PKG_VERSION"));
                assert_eq!(commit.len(), 12, "{v}");
                assert!(commit.bytes().all(|b| b.is_ascii_hexdigit()), "{v}");
            }
        }
    }
}
