//! The action's install logic (`scripts/install-action.sh`) against a local
//! HTTP server standing in for the release host: the right archive per OS and
//! architecture, a checksum mismatch refused, a missing release (or a branch
//! ref) falling back to a source build, a tool-cache hit downloading nothing,
//! and the install time with a release (target: under 10 s).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

const VERSION: &str = "0.1.0";
const PLATFORMS: &[(&str, &str, &str)] = &[
    ("Linux", "X64", "x86_64-unknown-linux-musl"),
    ("Linux", "ARM64", "aarch64-unknown-linux-musl"),
    ("macOS", "X64", "x86_64-apple-darwin"),
    ("macOS", "ARM64", "aarch64-apple-darwin"),
];

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-action.sh")
}

/// A release host serving `root` (GET only; 404 for anything missing),
/// counting the requests it answers.
struct Host {
    base: String,
    hits: Arc<AtomicUsize>,
}

fn serve(root: PathBuf) -> Host {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
    let hits = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&hits);
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            h.fetch_add(1, Ordering::SeqCst);
            let mut line = String::new();
            let mut r = BufReader::new(c.try_clone().unwrap());
            if r.read_line(&mut line).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                if r.read_line(&mut header).map_or(true, |n| n == 0) || header == "\r\n" {
                    break;
                }
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/");
            let file = root.join(path.trim_start_matches('/'));
            let (status, body) = match std::fs::read(&file) {
                Ok(b) if !path.contains("..") => ("200 OK", b),
                _ => ("404 Not Found", b"not found".to_vec()),
            };
            let _ = write!(
                c,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = c.write_all(&body);
        }
    });
    Host { base, hits }
}

/// A release folder like the one dist publishes: `v<version>/plangate-<target>.tar.xz`
/// (holding `plangate-<target>/plangate`, here a script naming its target) and its `.sha256`.
fn release(dir: &Path) {
    let rel = dir.join(format!("v{VERSION}"));
    std::fs::create_dir_all(&rel).unwrap();
    for (_, _, target) in PLATFORMS {
        let stage = dir.join("stage").join(format!("plangate-{target}"));
        std::fs::create_dir_all(&stage).unwrap();
        let bin = stage.join("plangate");
        std::fs::write(
            &bin,
            format!("#!/bin/sh\necho \"plangate {VERSION} {target}\"\n"),
        )
        .unwrap();
        let mut perm = std::fs::metadata(&bin).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&bin, perm).unwrap();
        let archive = rel.join(format!("plangate-{target}.tar.xz"));
        let st = Command::new("tar")
            .arg("-cJf")
            .arg(&archive)
            .arg("-C")
            .arg(dir.join("stage"))
            .arg(format!("plangate-{target}"))
            .status()
            .unwrap();
        assert!(st.success(), "tar -cJf failed (xz missing?)");
        let sum = hex::encode(Sha256::digest(std::fs::read(&archive).unwrap()));
        std::fs::write(
            rel.join(format!("plangate-{target}.tar.xz.sha256")),
            format!("{sum}  *plangate-{target}.tar.xz\n"),
        )
        .unwrap();
    }
}

struct Runner {
    tmp: tempfile::TempDir,
    host: Host,
}

impl Runner {
    fn new() -> Runner {
        let tmp = tempfile::tempdir().unwrap();
        release(&tmp.path().join("host"));
        let host = serve(tmp.path().join("host"));
        Runner { tmp, host }
    }

    fn run(&self, cmd: &str, env: &[(&str, &str)]) -> (Output, Duration) {
        let runner_temp = self.tmp.path().join("runner-temp");
        std::fs::create_dir_all(&runner_temp).unwrap();
        let mut c = Command::new("bash");
        c.arg(script())
            .arg(cmd)
            .env_remove("GITHUB_OUTPUT")
            .env_remove("INPUT_VERSION")
            .env("RUNNER_TEMP", &runner_temp)
            .env("RUNNER_TOOL_CACHE", self.tmp.path().join("tool-cache"))
            .env("ACTION_REPOSITORY", "owner/plangate")
            .env("PLANGATE_RELEASE_BASE", &self.host.base);
        for (k, v) in env {
            c.env(k, v);
        }
        let start = Instant::now();
        let o = c.output().unwrap();
        (o, start.elapsed())
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn value(o: &Output, key: &str) -> String {
    out(o)
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or("")
        .to_owned()
}

#[test]
fn the_release_binary_for_the_runners_os_and_arch_is_installed_in_seconds() {
    let r = Runner::new();
    let mut slowest = Duration::ZERO;
    for (os, arch, target) in PLATFORMS {
        let cache = r.tmp.path().join(format!("cache-{target}"));
        let (o, took) = r.run(
            "install",
            &[
                ("RUNNER_OS", os),
                ("RUNNER_ARCH", arch),
                ("ACTION_REF", "v0.1.0"),
                ("RUNNER_TOOL_CACHE", cache.to_str().unwrap()),
            ],
        );
        assert!(o.status.success(), "{os}/{arch}: {}", err(&o));
        assert_eq!(value(&o, "source"), "release", "{}", out(&o));
        assert_eq!(value(&o, "build"), "false");
        assert_eq!(value(&o, "version"), VERSION);
        let bin = value(&o, "bin");
        assert!(bin.starts_with(cache.to_str().unwrap()), "{bin}");
        let ran = Command::new(&bin).output().unwrap();
        assert_eq!(out(&ran).trim(), format!("plangate {VERSION} {target}"));
        slowest = slowest.max(took);
    }
    eprintln!("install from the stand-in release host: slowest of 4 platforms {slowest:?}");
    assert!(slowest < Duration::from_secs(10), "{slowest:?}");
}

#[test]
fn the_version_input_wins_over_the_ref_and_a_bad_one_is_refused() {
    let r = Runner::new();
    let env = [
        ("RUNNER_OS", "Linux"),
        ("RUNNER_ARCH", "X64"),
        ("ACTION_REF", "main"),
        ("INPUT_VERSION", "v0.1.0"),
    ];
    let (o, _) = r.run("install", &env);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(value(&o, "source"), "release");
    let (o, _) = r.run(
        "install",
        &[("ACTION_REF", "main"), ("INPUT_VERSION", "latest; rm")],
    );
    assert!(!o.status.success());
    assert!(err(&o).contains("is not a version"), "{}", err(&o));
}

#[test]
fn a_checksum_mismatch_is_refused_and_nothing_is_installed() {
    let r = Runner::new();
    let sum = r.tmp.path().join(format!(
        "host/v{VERSION}/plangate-x86_64-unknown-linux-musl.tar.xz.sha256"
    ));
    std::fs::write(&sum, format!("{}  plangate.tar.xz\n", "0".repeat(64))).unwrap();
    let env = [
        ("RUNNER_OS", "Linux"),
        ("RUNNER_ARCH", "X64"),
        ("ACTION_REF", "v0.1.0"),
    ];
    let (o, _) = r.run("install", &env);
    assert!(!o.status.success(), "{}", out(&o));
    assert!(err(&o).contains("checksum mismatch"), "{}", err(&o));
    assert!(value(&o, "bin").is_empty());
    let cached = r
        .tmp
        .path()
        .join("tool-cache/plangate/0.1.0/x86_64-unknown-linux-musl");
    assert!(!cached.join("plangate").exists());
    // No checksum at all is refused too.
    std::fs::remove_file(&sum).unwrap();
    let (o, _) = r.run("install", &env);
    assert!(!o.status.success());
    assert!(err(&o).contains("no checksum"), "{}", err(&o));
}

#[test]
fn no_matching_release_falls_back_to_a_source_build() {
    let r = Runner::new();
    // A version with no release on the host.
    let (o, _) = r.run(
        "install",
        &[
            ("RUNNER_OS", "Linux"),
            ("RUNNER_ARCH", "X64"),
            ("ACTION_REF", "v9.9.9"),
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(value(&o, "build"), "true");
    assert!(err(&o).contains("no release v9.9.9"), "{}", err(&o));
    // A branch or a commit (a fork): no request is made at all.
    let before = r.host.hits.load(Ordering::SeqCst);
    for reference in ["main", "3f2a9c1d", ""] {
        let (o, _) = r.run("install", &[("ACTION_REF", reference)]);
        assert!(o.status.success(), "{}", err(&o));
        assert_eq!(value(&o, "build"), "true", "{reference}");
    }
    assert_eq!(r.host.hits.load(Ordering::SeqCst), before);
    // A platform with no release binary.
    let (o, _) = r.run(
        "install",
        &[
            ("RUNNER_OS", "Windows"),
            ("RUNNER_ARCH", "X64"),
            ("ACTION_REF", "v0.1.0"),
        ],
    );
    assert_eq!(value(&o, "build"), "true");
}

#[test]
fn a_tool_cache_hit_downloads_nothing() {
    let r = Runner::new();
    let env = [
        ("RUNNER_OS", "macOS"),
        ("RUNNER_ARCH", "ARM64"),
        ("ACTION_REF", "v0.1.0"),
    ];
    let (o, _) = r.run("install", &env);
    assert_eq!(value(&o, "source"), "release", "{}", err(&o));
    let hits = r.host.hits.load(Ordering::SeqCst);
    assert_eq!(hits, 2, "the archive and its checksum");
    let (o, took) = r.run("install", &env);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(value(&o, "source"), "cache");
    assert_eq!(
        r.host.hits.load(Ordering::SeqCst),
        hits,
        "a cache hit downloaded"
    );
    eprintln!("install from the tool cache: {took:?}");
}

#[test]
fn the_source_build_runs_cargo_install_locked_from_the_action() {
    let r = Runner::new();
    let bin = r.tmp.path().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = r.tmp.path().join("cargo.log");
    let cargo = bin.join("cargo");
    std::fs::write(
        &cargo,
        format!("#!/bin/sh\necho \"$@\" > '{}'\n", log.display()),
    )
    .unwrap();
    let mut perm = std::fs::metadata(&cargo).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&cargo, perm).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (o, _) = r.run("build", &[("PATH", &path), ("ACTION_PATH", "/the/action")]);
    assert!(o.status.success(), "{}", err(&o));
    let args = std::fs::read_to_string(&log).unwrap();
    assert!(
        args.starts_with("install --locked --quiet --path /the/action --root "),
        "{args}"
    );
    assert!(value(&o, "bin").ends_with("/bin/plangate"));
}
