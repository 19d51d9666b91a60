//! The git commands of a push: in the private repository, with an empty
//! environment, command-scope configuration only (the credential among it
//! for the network ones), a deadline, and errors as one redacted line.

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
        use std::os::unix::process::CommandExt as _;
        let what = args.first().copied().unwrap_or("").to_owned();
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
        if network {
            config.push((
                format!("http.{}.extraheader", self.url),
                self.header.to_owned(),
            ));
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
        for k in ["HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"] {
            if let Some(v) = crate::environ::var_os(k) {
                c.env(k, v);
            }
        }
        for (i, (k, v)) in config.iter().enumerate() {
            c.env(format!("GIT_CONFIG_KEY_{i}"), k)
                .env(format!("GIT_CONFIG_VALUE_{i}"), v);
        }
        let failed = |why: String| PushError::Git {
            what: what.clone(),
            why: one_line(&why),
        };
        let mut child = c
            .spawn()
            .map_err(|e| failed(format!("cannot start git: {e}")))?;
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
