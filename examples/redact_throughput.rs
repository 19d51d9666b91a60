#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]
//! Throughput of the redaction layer (`redact::clean`) on a deterministic
//! log-like corpus, with declared secrets known (bench/redact_throughput.sh).
//!
//! `cargo run --release --example redact_throughput -- [MB] [CHUNK_BYTES]`

use std::time::Instant;

/// A small deterministic generator (xorshift), so every run sees the same text.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
    fn token(&mut self, n: usize) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n)
            .map(|_| A[(self.next() % A.len() as u64) as usize] as char)
            .collect()
    }
}

fn corpus(g: &mut Gen, bytes: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "compiling",
        "running",
        "test",
        "ok",
        "warning:",
        "error[E0308]:",
        "src/lib.rs:42:7",
        "https://example.com/api/v1/items?page=2",
        "finished",
        "in",
        "0.42s",
        "—",
        "café",
        "\x1b[32mok\x1b[0m",
        "[INFO]",
        "GET",
        "200",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "=>",
        "{\"status\":\"ok\",\"count\":17}",
        "Downloaded",
        "serde",
        "v1.0.210",
        "the",
        "a",
    ];
    let mut out = Vec::with_capacity(bytes + 256);
    while out.len() < bytes {
        let n = 4 + g.next() % 12;
        for i in 0..n {
            if i > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(g.pick(WORDS).as_bytes());
        }
        out.push(b'\n');
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mb: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(16);
    let chunk: usize = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64 * 1024);
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    // Declared secrets: 12 tokens of 40 bytes, one multi-line key-like value
    // of ~1.7 KB, one low-entropy password.
    let mut secrets: Vec<String> = (0..12).map(|_| g.token(40)).collect();
    let body: Vec<String> = (0..26).map(|_| g.token(64)).collect();
    secrets.push(format!(
        "-----BEGIN TEST KEY-----\n{}\n-----END TEST KEY-----",
        body.join("\n")
    ));
    secrets.push("hunter2hunter2".to_owned());
    let t = Instant::now();
    plangate::redaction::remember_secrets(secrets.iter().map(String::as_str));
    let setup = t.elapsed();
    let text = corpus(&mut g, mb * 1024 * 1024);
    let _ = plangate::redaction::clean(b"warm up");
    let mut times = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let mut changed = 0usize;
        for c in text.chunks(chunk) {
            if let std::borrow::Cow::Owned(o) = plangate::redaction::clean(c) {
                if changed == 0 {
                    let at = c.iter().zip(&o).position(|(x, y)| x != y).unwrap_or(0);
                    let from = at.saturating_sub(60);
                    eprintln!(
                        "changed: {:?}\n     to: {:?}",
                        String::from_utf8_lossy(&c[from..(at + 60).min(c.len())]),
                        String::from_utf8_lossy(&o[from..(at + 60).min(o.len())])
                    );
                }
                changed += 1;
            }
        }
        times.push(t.elapsed().as_secs_f64());
        assert_eq!(changed, 0, "the corpus holds no secret");
    }
    times.sort_by(f64::total_cmp);
    let median = times[1];
    println!(
        "redact clean: {:.1} MiB in chunks of {} B: median {:.3} s = {:.1} MiB/s (setup {:.1} ms, {} secrets)",
        text.len() as f64 / 1048576.0,
        chunk,
        median,
        text.len() as f64 / 1048576.0 / median,
        setup.as_secs_f64() * 1000.0,
        secrets.len()
    );
}
