//! The hidden `__egress-forward` helper, which runs first inside a bwrap
//! sandbox whose step declares `egress`. The step's network namespace has
//! only loopback: this helper listens on `127.0.0.1:PORT` there, runs the
//! rest of the command line (the supervisor, then the step) as its child,
//! and carries each connection to plangate's proxy through the unix socket
//! bound into the sandbox. It ends as its child ends.
//!
//! It is not dumpable (the step, same user, cannot ptrace it or read its
//! memory), ignores the signals that stop a step (the supervisor it runs
//! handles them) and holds nothing the step could not reach through the
//! proxy anyway.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;

/// The hidden subcommand.
pub(crate) const FORWARD: &str = "__egress-forward";

/// Arguments of the hidden `__egress-forward` helper.
#[derive(Debug, Clone, clap::Args)]
pub struct ForwardArgs {
    /// `PORT=SOCKET`: listen on 127.0.0.1:PORT, carry each connection to
    /// plangate's unix socket SOCKET (the egress proxy, the model API endpoint).
    #[arg(long = "route", value_name = "PORT=SOCKET", required = true)]
    pub routes: Vec<String>,
    /// The command.
    #[arg(last = true, required = true)]
    pub command: Vec<std::ffi::OsString>,
}

/// Listen, run the command, forward until it ends; exits as it ended.
/// Returns only on failure (the command did not run, or could not be waited for).
pub(crate) fn main(a: &ForwardArgs) -> String {
    use std::os::unix::process::ExitStatusExt;
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    let mut listeners = Vec::new();
    for r in &a.routes {
        let Some((port, socket)) = r
            .split_once('=')
            .and_then(|(p, s)| Some((p.parse::<u16>().ok()?, PathBuf::from(s))))
        else {
            return format!("egress: `{r}` is not PORT=SOCKET; the command was not run");
        };
        match TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)) {
            Ok(l) => listeners.push((l, socket)),
            Err(e) => {
                return format!(
                    "egress: cannot listen on 127.0.0.1:{port} in the sandbox: {e}; the command was not run"
                );
            }
        }
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
            return format!("egress: cannot handle signals: {e}; the command was not run");
        }
    }
    let Some((program, rest)) = a.command.split_first() else {
        return "egress: no command given".into();
    };
    // The listener is close-on-exec: the command does not hold it.
    let mut child = match std::process::Command::new(program).args(rest).spawn() {
        Ok(c) => c,
        Err(e) => return format!("egress: cannot run `{}`: {e}", program.to_string_lossy()),
    };
    for (listener, socket) in listeners {
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let socket = socket.clone();
                std::thread::spawn(move || carry(client, &socket));
            }
        });
    }
    let status = match child.wait() {
        Ok(s) => s,
        Err(e) => return format!("egress: cannot wait for the command: {e}"),
    };
    if let Some(sig) = status.signal() {
        let _ = signal_hook::low_level::emulate_default_handler(sig);
    }
    std::process::exit(
        status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
    )
}

/// One connection: to the proxy's socket, bytes both ways.
fn carry(client: TcpStream, socket: &std::path::Path) {
    let Ok(up) = UnixStream::connect(socket) else {
        let _ = (&client).write_all(
            b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    };
    let (Ok(client2), Ok(up2)) = (client.try_clone(), up.try_clone()) else {
        return;
    };
    let t = std::thread::spawn(move || {
        copy(&client2, &up2);
        let _ = up2.shutdown(Shutdown::Write);
    });
    copy(&up, &client);
    let _ = client.shutdown(Shutdown::Write);
    let _ = t.join();
}

fn copy(mut from: impl Read, mut to: impl Write) {
    let mut buf = [0_u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}
