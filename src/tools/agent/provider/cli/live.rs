//! A CLI's event stream read while it runs: the same readers as after the
//! run ([`Stream`]), fed line by line from the growing stdout file
//! ([`Tail`]), so a heartbeat can say how many events, tokens and dollars the
//! stream reported so far.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use serde_json::Value;

use super::{CliRun, claude, codex};
use crate::format::agent::CliOutputFormat;

/// A JSON Lines stream of one of the stream formats, event by event.
#[derive(Debug)]
pub(crate) enum Stream {
    /// `claude-stream-json`.
    Claude(claude::Stream),
    /// `codex-jsonl`.
    Codex(Box<codex::Stream>),
    /// A format that is not a stream: nothing to read live.
    None,
}

impl Stream {
    /// The reader for `format`.
    pub(crate) fn new(format: CliOutputFormat) -> Stream {
        match format {
            CliOutputFormat::ClaudeStreamJson => Stream::Claude(claude::Stream::default()),
            CliOutputFormat::CodexJsonl => Stream::Codex(Box::default()),
            _ => Stream::None,
        }
    }

    /// Take one event.
    pub(crate) fn event(&mut self, v: &Value) {
        match self {
            Stream::Claude(s) => s.event(v),
            Stream::Codex(s) => s.event(v),
            Stream::None => {}
        }
    }

    /// Tokens so far and the cost, when the stream gave it.
    pub(crate) fn so_far(&self) -> (u64, Option<f64>) {
        match self {
            Stream::Claude(s) => s.so_far(),
            Stream::Codex(s) => s.so_far(),
            Stream::None => (0, None),
        }
    }

    /// What the whole stream said.
    pub(crate) fn finish(self, ended: bool) -> CliRun {
        match self {
            Stream::Claude(s) => s.finish(ended),
            Stream::Codex(s) => s.finish(ended),
            Stream::None => CliRun::default(),
        }
    }
}

/// What a stream said so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Progress {
    /// Events (lines) read.
    pub events: u64,
    /// Tokens reported so far (None: the format reports none while running).
    pub tokens: Option<u64>,
    /// Dollars reported so far.
    pub cost_usd: Option<f64>,
}

/// Most bytes read from the file per poll (the rest waits for the next one).
const POLL_BYTES: u64 = 4 * 1024 * 1024;
/// A line longer than this is skipped, not kept whole in memory.
const MAX_LINE: usize = 8 * 1024 * 1024;

/// A growing stdout file, read from where the last poll stopped.
#[derive(Debug)]
pub(crate) struct Tail {
    path: PathBuf,
    offset: u64,
    pending: Vec<u8>,
    skipping: bool,
    stream: Stream,
    events: u64,
}

impl Tail {
    /// Follow `path`, which a CLI printing `format` writes.
    pub(crate) fn new(path: PathBuf, format: CliOutputFormat) -> Tail {
        Tail {
            path,
            offset: 0,
            pending: Vec::new(),
            skipping: false,
            stream: Stream::new(format),
            events: 0,
        }
    }

    /// Read what was added since the last poll; what the stream said so far.
    pub(crate) fn poll(&mut self) -> Progress {
        if !matches!(self.stream, Stream::None) {
            self.read_more();
        }
        let (tokens, cost_usd) = self.stream.so_far();
        Progress {
            events: self.events,
            tokens: (tokens > 0).then_some(tokens),
            cost_usd,
        }
    }

    fn read_more(&mut self) {
        let Ok(mut f) = crate::regular::open(&self.path) else {
            return;
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut buf = Vec::new();
        let Ok(got) = f.take(POLL_BYTES).read_to_end(&mut buf) else {
            return;
        };
        self.offset += got as u64;
        for chunk in buf.split_inclusive(|b| *b == b'\n') {
            if chunk.last() != Some(&b'\n') {
                if !self.skipping {
                    self.pending.extend_from_slice(chunk);
                }
                if self.pending.len() > MAX_LINE {
                    self.pending.clear();
                    self.skipping = true;
                }
                continue;
            }
            if self.skipping {
                self.skipping = false;
                continue;
            }
            self.pending.extend_from_slice(chunk);
            let line = std::mem::take(&mut self.pending);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            self.events += 1;
            if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                self.stream.event(&v);
            }
        }
    }
}
