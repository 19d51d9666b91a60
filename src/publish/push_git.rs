//! The git commands of a push: in the private repository, with an empty
//! environment, command-scope configuration only, a deadline, and errors as
//! one redacted line.
//!
//! The credential of a network command is in no environment, argument or
//! file. git's standard error is one end of a `socketpair` instead of a
//! pipe: plangate writes the credential into it (`username=…`,
//! `password=…`) and shuts its writing half before git starts, then reads
//! git's messages from it as from a pipe. When the remote asks for a
//! credential (401), `git-remote-https` runs the command-scope credential
//! helper, a `/bin/sh` function of builtins (`test`, `read`, `printf`:
//! nothing looked up on `PATH`) that reads those lines back from its
//! standard error (git's, inherited) and prints them. `/proc/<pid>/environ`
//! and `cmdline` of every git process hold no credential, and a socket
//! cannot be opened through `/proc/<pid>/fd`.

use std::io::{Read as _, Write as _};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::PushError;
use std::path::Path;

/// Longest a fetch or a push may take.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest a local git command may take.
const LOCAL_TIMEOUT: Duration = Duration::from_secs(120);

/// One git command in the private repository.
pub(super) struct Git<'a> {
    pub(super) dir: &'a Path,
    pub(super) url: &'a str,
    pub(super) header: &'a str,
}

impl Git<'_> {
    /// The git command of `args` (its configuration as the module says),
    /// with plangate's end of the credential's socket for a network one.
    fn command(
        &self,
        args: &[&str],
        network: bool,
    ) -> Result<(Command, Option<std::os::unix::net::UnixStream>), String> {
        use std::os::unix::process::CommandExt as _;
        let mut config: Vec<(String, String)> = [
            ("credential.helper", ""),
            ("core.askPass", ""),
            ("core.hooksPath", "/dev/null"),
            ("core.fsmonitor", "false"),
            ("protocol.allow", "never"),
            ("protocol.https.allow", "always"),
            ("protocol.http.allow", "always"),
            ("http.followRedirects", "false"),
            ("http.lowSpeedLimit", "1000"),
            ("http.lowSpeedTime", "60"),
            ("gc.auto", "0"),
            ("maintenance.auto", "false"),
            ("fetch.fsckObjects", "true"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        // The credential, waiting in git's standard error (see the module).
        let mut socket = None;
        if network {
            let (ours, theirs) = credential_socket(self.header)?;
            // For the remote's origin only: a proxy asking (407) gets nothing.
            config.push((
                format!("credential.{}.helper", origin(self.url)),
                HELPER.to_owned(),
            ));
            socket = Some((ours, theirs));
        }
        let mut c = Command::new(crate::environ::git());
        c.args(args)
            .env_clear()
            .env("PATH", crate::environ::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir)
            .env("LC_ALL", "C")
            .env("GIT_DIR", self.dir.join("repo.git"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_CONFIG_COUNT", config.len().to_string())
            .current_dir(self.dir)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut err_socket = None;
        if let Some((ours, theirs)) = socket {
            c.stderr(Stdio::from(theirs));
            err_socket = Some(ours);
        }
        for k in ["HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"] {
            if let Some(v) = crate::environ::var_os(k) {
                c.env(k, v);
            }
        }
        for (i, (k, v)) in config.iter().enumerate() {
            c.env(format!("GIT_CONFIG_KEY_{i}"), k)
                .env(format!("GIT_CONFIG_VALUE_{i}"), v);
        }
        Ok((c, err_socket))
    }

    pub(super) fn run(
        &self,
        args: &[&str],
        network: bool,
        input: Vec<u8>,
    ) -> Result<Vec<u8>, PushError> {
        let timeout = if network {
            NETWORK_TIMEOUT
        } else {
            LOCAL_TIMEOUT
        };
        self.run_for(args, network, input, timeout)
    }

    /// [`Git::run`] with its deadline. git starts in a process group of its
    /// own; at the deadline the whole group is killed (git, the
    /// `git-remote-https` it started with the credential, and whatever
    /// those started), then git is reaped.
    fn run_for(
        &self,
        args: &[&str],
        network: bool,
        input: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, PushError> {
        let what = args.first().copied().unwrap_or("").to_owned();
        let (mut c, err_socket) = self.command(args, network).map_err(|why| PushError::Git {
            what: what.clone(),
            why,
        })?;
        let failed = |why: String| PushError::Git {
            what: what.clone(),
            why: one_line(&why),
        };
        let mut child = c
            .spawn()
            .map_err(|e| failed(format!("cannot start git: {e}")))?;
        // git's end of the socket was dropped with `c`'s spawn: only git
        // (and its children) hold it now.
        drop(c);
        let mut stdin = child.stdin.take();
        let feeder = std::thread::spawn(move || {
            if let Some(s) = stdin.as_mut() {
                let _ = s.write_all(&input);
            }
        });
        let (out, err) = (child.stdout.take(), child.stderr.take());
        let reader = |r: Option<std::process::ChildStdout>| {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                if let Some(r) = r {
                    let _ = r.take(64 * 1024 * 1024).read_to_end(&mut v);
                }
                v
            })
        };
        let out = reader(out);
        let err: Option<Box<dyn std::io::Read + Send>> = match err_socket {
            Some(s) => Some(Box::new(s)),
            None => err.map(|e| Box::new(e) as Box<dyn std::io::Read + Send>),
        };
        let err = std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(r) = err {
                let _ = r.take(64 * 1024).read_to_end(&mut v);
            }
            v
        });
        let deadline = Instant::now() + timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(None) => {
                    kill_group(&mut child);
                    return Err(failed(format!("timed out after {}s", timeout.as_secs())));
                }
                Err(e) => {
                    kill_group(&mut child);
                    return Err(failed(e.to_string()));
                }
            }
        };
        let _ = feeder.join();
        let out = out.join().unwrap_or_default();
        let err = err.join().unwrap_or_default();
        if status.success() {
            Ok(out)
        } else {
            // A push's refusal (`! refs/heads/x [remote rejected] (why)`) is on stdout.
            let refused: Vec<String> = String::from_utf8_lossy(&out)
                .lines()
                .filter(|l| l.starts_with('!'))
                .map(str::to_owned)
                .collect();
            let mut why = String::from_utf8_lossy(&err).into_owned();
            if !refused.is_empty() {
                why = format!("{} {why}", refused.join(" "));
            }
            Err(failed(why))
        }
    }

    pub(super) fn text(&self, args: &[&str], network: bool) -> Result<String, PushError> {
        Ok(
            String::from_utf8_lossy(&self.run(args, network, Vec::new())?)
                .trim()
                .to_owned(),
        )
    }
}

/// The user and password of a basic `AUTHORIZATION` header as
/// `push::basic_auth` makes it; None for any other header, or a value the
/// credential protocol (one `key=value` per line) cannot carry.
fn basic_credential(header: &str) -> Option<(String, String)> {
    use base64::Engine as _;
    let (name, value) = header.split_once(':')?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !name.trim().eq_ignore_ascii_case("authorization") || !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, password) = text.split_once(':')?;
    let fits = |s: &str| !s.is_empty() && !s.contains(['\n', '\r', '\0']);
    (fits(user) && fits(password)).then(|| (user.to_owned(), password.to_owned()))
}

/// `scheme://host[:port]` of `url` (git matches `credential.<url>.*` on it).
fn origin(url: &str) -> String {
    match url.parse::<http::Uri>() {
        Ok(u) => match (u.scheme_str(), u.authority()) {
            (Some(s), Some(a)) => format!("{s}://{}", a.as_str().rsplit('@').next().unwrap_or("")),
            _ => url.to_owned(),
        },
        Err(_) => url.to_owned(),
    }
}

/// The credential helper: git appends ` get`, ` store` or ` erase`; only
/// `get` answers, with the lines it reads from its standard error (the
/// socket [`credential_socket`] made), up to their end. Builtins only.
const HELPER: &str = "!f() { test \"$1\" = get || return 0; while IFS= read -r l; do printf '%s\\n' \"$l\"; done <&2; }; f";

/// A socket pair holding the credential of `header` for git's credential
/// protocol: plangate's end (written, its writing half shut: the helper
/// reads the lines then end of file; git's messages come back through it)
/// and git's end, to be git's standard error.
fn credential_socket(
    header: &str,
) -> Result<(std::os::unix::net::UnixStream, std::os::fd::OwnedFd), String> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};
    let (user, password) = basic_credential(header)
        .ok_or_else(|| "the credential is not a basic one plangate can hand to git".to_owned())?;
    let (ours, theirs) = socketpair(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| format!("cannot make the credential's socket: {e}"))?;
    let mut ours = std::os::unix::net::UnixStream::from(ours);
    ours.write_all(format!("username={user}\npassword={password}\n").as_bytes())
        .and_then(|()| ours.shutdown(std::net::Shutdown::Write))
        .map_err(|e| format!("cannot hand the credential to git: {e}"))?;
    Ok((ours, theirs))
}

/// Kill the process group `child` leads (SIGKILL: git and every process it
/// started, none of which changed its group), then reap `child`.
fn kill_group(child: &mut std::process::Child) {
    let group = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    match group {
        Some(g) => {
            let _ = rustix::process::kill_process_group(g, rustix::process::Signal::KILL);
        }
        None => {
            let _ = child.kill();
        }
    }
    let _ = child.wait();
}

/// git's message in one redacted line of at most 300 characters.
fn one_line(s: &str) -> String {
    let s = crate::redact::clean_str(s);
    let flat: String = s
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(300)
        .collect();
    if flat.is_empty() {
        "no message".to_owned()
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The processes whose command line holds `needle`.
    fn holding(needle: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                out.push((e.file_name().to_string_lossy().into_owned(), cmd));
            }
        }
        out
    }

    #[test]
    fn only_a_basic_credential_that_fits_the_protocol_is_handed_to_git() {
        let h = crate::publish::push::basic_auth("x-access-token", "ghs_abc:d=e");
        assert_eq!(
            basic_credential(&h),
            Some(("x-access-token".to_owned(), "ghs_abc:d=e".to_owned()))
        );
        let b64 = |s: &str| {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(s)
        };
        for bad in [
            format!("AUTHORIZATION: bearer {}", b64("u:p")),
            format!("X-Other: basic {}", b64("u:p")),
            format!(
                "AUTHORIZATION: basic {}",
                b64("u:p\nurl=https://evil.example")
            ),
            format!("AUTHORIZATION: basic {}", b64("u\rx:p")),
            format!("AUTHORIZATION: basic {}", b64("u:")),
            format!("AUTHORIZATION: basic {}", b64(":p")),
            format!("AUTHORIZATION: basic {}", b64("nocolon")),
            "AUTHORIZATION: basic !!!".to_owned(),
            String::new(),
        ] {
            assert_eq!(basic_credential(&bad), None, "{bad}");
        }
        assert_eq!(
            origin("https://github.com/acme/w.git"),
            "https://github.com"
        );
        assert_eq!(
            origin("http://127.0.0.1:8080/a/b.git"),
            "http://127.0.0.1:8080"
        );
    }

    #[test]
    fn a_timeout_kills_git_and_every_process_it_started() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let init = Command::new(crate::environ::git())
            .args(["init", "--bare", "-q"])
            .arg(dir.path().join("repo.git"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(init.success());
        // A remote that accepts and never answers: git-remote-http waits on it.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("{e}"))
            .port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in listener.incoming().flatten() {
                held.push(s);
            }
        });
        let url = format!("http://127.0.0.1:{port}/never-answers-{port}.git");
        let git = Git {
            dir: dir.path(),
            url: &url,
            header: "AUTHORIZATION: basic bm90OmFyZWFsdG9rZW4=",
        };
        let started = Instant::now();
        let r = git.run_for(
            &["fetch", "--depth=1", &url, "main"],
            true,
            Vec::new(),
            Duration::from_secs(3),
        );
        assert!(
            matches!(&r, Err(PushError::Git { why, .. }) if why.contains("timed out")),
            "{:?}",
            r.err()
        );
        assert!(started.elapsed() < Duration::from_secs(30));
        // The helper that held the connection (and the token) is gone too.
        let needle = format!("never-answers-{port}");
        let mut left = holding(&needle);
        for _ in 0..100 {
            if left.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            left = holding(&needle);
        }
        assert!(left.is_empty(), "still running after the timeout: {left:?}");
    }
}
