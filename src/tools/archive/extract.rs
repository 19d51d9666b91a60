//! Extraction, entry by entry, by plangate itself (never the crates'
//! `unpack`), so that every refusal and every limit is ours:
//!
//! - every entry goes first into a staging directory inside the destination
//!   (`.plangate-extract-*`); only when the whole archive has been read and
//!   checked are its entries renamed into place. A refused or stopped
//!   extraction leaves the destination as it was (the staging directory is
//!   removed);
//! - names are normalised ([`super::names::normalize`]); an entry whose path
//!   passes through a symlink or a file is refused;
//! - symlinks are created last, after their target was resolved through the
//!   archive's own links and the destination's existing ones: absolute or
//!   escaping targets are refused; hardlinks must name a regular file this
//!   archive already extracted; devices and fifos are refused;
//! - the bytes actually written (not the sizes headers declare) count against
//!   `max_total_bytes`, entries against `max_entries`, and the bytes an
//!   archive expands to against `max_ratio` times its size.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::error::ArchiveError;
use super::names::{Excludes, lexical_target, normalize, show_path, shown};
use crate::tools::Stop;

/// Expansion below this many bytes is never called a bomb, whatever the ratio
/// (a 2 KiB archive of a 600 KiB log is ordinary).
pub(super) const RATIO_FLOOR: u64 = 1 << 20;
/// Longest symlink target read from a zip entry.
const MAX_LINK_TARGET: u64 = 4096;
/// Most symlinks followed while resolving one target (as Linux's ELOOP).
const MAX_HOPS: u32 = 40;

/// The limits of one extraction (or listing).
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Most bytes written.
    pub max_total_bytes: u64,
    /// Most entries.
    pub max_entries: u64,
    /// Most bytes expanded per byte of archive.
    pub max_ratio: u64,
}

/// Counts what an archive expands to and what is written, and remembers the
/// first refusal so that an I/O error raised inside a decoder or the tar
/// crate can be reported as the rule it broke.
pub(super) struct Meter {
    limits: Limits,
    archive_size: u64,
    /// For a tar stream: most decompressed bytes read (headers, padding and
    /// excluded entries included). Bounds the memory the tar crate gives
    /// to long names and pax headers.
    stream_cap: Option<u64>,
    written: Cell<u64>,
    expanded: Cell<u64>,
    refusal: RefCell<Option<String>>,
    stop: Stop,
}

impl Meter {
    /// A meter for an archive of `archive_size` bytes.
    pub(super) fn new(
        limits: Limits,
        archive_size: u64,
        stream_cap: Option<u64>,
        stop: Stop,
    ) -> Meter {
        Meter {
            limits,
            archive_size,
            stream_cap,
            written: Cell::new(0),
            expanded: Cell::new(0),
            refusal: RefCell::new(None),
            stop,
        }
    }

    /// Bytes written so far.
    pub(super) fn written(&self) -> u64 {
        self.written.get()
    }

    /// Record a refusal (the first one wins) and return it as an I/O error.
    pub(super) fn refuse(&self, why: String) -> io::Error {
        let mut r = self.refusal.borrow_mut();
        let first = r.get_or_insert(why);
        io::Error::other(first.clone())
    }

    /// The refusal behind an error, if a limit caused it; else `fallback`.
    pub(super) fn explain(&self, fallback: ArchiveError) -> ArchiveError {
        match self.refusal.borrow().clone() {
            Some(why) => ArchiveError::Limit(why),
            None => fallback,
        }
    }

    /// Whether the step must stop; records why.
    pub(super) fn stopped(&self) -> Result<(), ArchiveError> {
        if self.stop.now() {
            return Err(ArchiveError::Limit(
                self.refuse(
                    "stopped before the archive was finished (timeout or run stopped)".into(),
                )
                .to_string(),
            ));
        }
        Ok(())
    }

    /// Count `n` more bytes the archive expanded to.
    pub(super) fn add_expanded(&self, n: u64) -> io::Result<()> {
        let e = self.expanded.get().saturating_add(n);
        self.expanded.set(e);
        if self.stop.now() {
            return Err(self.refuse(
                "stopped before the archive was finished (timeout or run stopped)".into(),
            ));
        }
        let allowed = self
            .archive_size
            .max(1)
            .saturating_mul(self.limits.max_ratio);
        if e > RATIO_FLOOR && e > allowed {
            return Err(self.refuse(format!(
                "the archive expands to more than {} times its size of {} bytes (max_ratio {}): refused as a decompression bomb",
                self.limits.max_ratio, self.archive_size, self.limits.max_ratio
            )));
        }
        if let Some(cap) = self.stream_cap
            && e > cap
        {
            return Err(self.refuse(format!(
                "the archive's content passes {cap} bytes (max_total_bytes {} plus room for headers and skipped entries)",
                self.limits.max_total_bytes
            )));
        }
        Ok(())
    }

    /// Count `n` bytes about to be written; refuses before passing the limit.
    /// The ratio is checked on what is written too: a sparse tar entry's
    /// holes are written without being read from the stream.
    fn add_written(&self, n: u64, entry: &str) -> io::Result<()> {
        let w = self.written.get().saturating_add(n);
        if w > self.limits.max_total_bytes {
            return Err(self.refuse(format!(
                "extraction stopped at entry `{entry}`: it would write more than {} bytes (max_total_bytes)",
                self.limits.max_total_bytes
            )));
        }
        let allowed = self
            .archive_size
            .max(1)
            .saturating_mul(self.limits.max_ratio);
        if w > RATIO_FLOOR && w > allowed {
            return Err(self.refuse(format!(
                "extraction stopped at entry `{entry}`: the archive writes more than {} times its size of {} bytes (max_ratio {}, sparse holes counted): refused as a decompression bomb",
                self.limits.max_ratio, self.archive_size, self.limits.max_ratio
            )));
        }
        self.written.set(w);
        Ok(())
    }

    /// Count one more entry.
    pub(super) fn entry_count_ok(&self, count: u64) -> Result<(), ArchiveError> {
        if count > self.limits.max_entries {
            return Err(ArchiveError::Limit(
                self.refuse(format!(
                    "the archive has more than {} entries (max_entries)",
                    self.limits.max_entries
                ))
                .to_string(),
            ));
        }
        Ok(())
    }
}

/// A reader whose bytes count as expansion (a tar's decompressed stream).
pub(super) struct Metered<'m, R> {
    /// The decoder.
    pub inner: R,
    /// Where bytes are counted.
    pub meter: &'m Meter,
}

impl<R: Read> Read for Metered<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.meter.add_expanded(n as u64)?;
        Ok(n)
    }
}

/// What an entry is.
#[derive(Debug, Clone)]
pub(super) enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file; `declared` is the size its header claims when the
    /// format can lie about it (zip), `mode` its Unix mode.
    File {
        /// Size the header declares (zip); tar sizes frame the data itself.
        declared: Option<u64>,
        /// Unix mode bits from the archive.
        mode: u32,
    },
    /// A symlink to this target.
    Symlink(Vec<u8>),
    /// A hardlink to this earlier entry.
    Hardlink(Vec<u8>),
    /// A device or fifo (always refused): what it is.
    Special(&'static str),
    /// Metadata only (a pax global header): nothing to write.
    Skip,
    /// A type plangate does not extract.
    Unsupported(String),
}

/// What the staging directory holds at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Staged {
    Dir,
    File,
    Symlink(Vec<u8>),
}

/// Where a symlink found in the destination points.
enum DestLink {
    /// Not a symlink (or nothing there).
    None,
    /// Relative to the link's directory.
    Relative(Vec<u8>),
    /// Absolute but inside the destination: relative to its root.
    FromRoot(Vec<u8>),
}

/// One extraction in progress.
pub(super) struct Extractor<'m> {
    dest: PathBuf,
    /// The workspace (canonical): existing links anywhere in it are checked.
    workspace: PathBuf,
    /// The permission rules for the paths written (None: no list in force).
    judge: Option<std::sync::Arc<crate::tools::judge::PathJudge>>,
    staging: tempfile::TempDir,
    overwrite: bool,
    excludes: Option<Excludes>,
    meter: &'m Meter,
    /// Whether bytes read from entries count as expansion (zip; a tar's
    /// stream is counted by [`Metered`]).
    count_entry_bytes: bool,
    entries: u64,
    staged: BTreeMap<PathBuf, Staged>,
    /// Non-directory entries written, in archive order.
    pub files: Vec<String>,
    /// Entries left out by `exclude_patterns`.
    pub excluded: u64,
    /// Directories created.
    pub directories: u64,
    /// Symlinks created.
    pub symlinks: u64,
    /// Things worth telling (permissions dropped, ...).
    pub warnings: Vec<String>,
    dropped_modes: u64,
    /// Entries already renamed into the destination (non-zero only if a rename failed midway).
    pub moved: usize,
}

impl<'m> Extractor<'m> {
    /// Start extracting into `dest` (absolute, canonical, existing).
    pub(super) fn new(
        dest: &Path,
        workspace: &Path,
        judge: Option<std::sync::Arc<crate::tools::judge::PathJudge>>,
        overwrite: bool,
        excludes: Option<Excludes>,
        meter: &'m Meter,
        count_entry_bytes: bool,
    ) -> Result<Extractor<'m>, ArchiveError> {
        let staging = tempfile::Builder::new()
            .prefix(".plangate-extract-")
            .tempdir_in(dest)
            .map_err(|e| {
                ArchiveError::failed("cannot create a staging directory in the destination", e)
            })?;
        Ok(Extractor {
            dest: dest.to_path_buf(),
            workspace: workspace.to_path_buf(),
            judge,
            staging,
            overwrite,
            excludes,
            meter,
            count_entry_bytes,
            entries: 0,
            staged: BTreeMap::new(),
            files: Vec::new(),
            excluded: 0,
            directories: 0,
            symlinks: 0,
            warnings: Vec::new(),
            dropped_modes: 0,
            moved: 0,
        })
    }

    /// Entries seen so far (excluded ones included).
    pub(super) fn entries(&self) -> u64 {
        self.entries
    }

    /// Extract one entry into the staging directory, or refuse it.
    pub(super) fn entry(
        &mut self,
        raw: &[u8],
        kind: EntryKind,
        data: &mut dyn Read,
    ) -> Result<(), ArchiveError> {
        self.entries += 1;
        self.meter.entry_count_ok(self.entries)?;
        self.meter.stopped()?;
        let name = shown(raw);
        let rel = match normalize(raw)
            .map_err(|why| ArchiveError::Refused(format!("entry `{name}` {why}")))?
        {
            Some(rel) => rel,
            None if matches!(kind, EntryKind::Dir | EntryKind::Skip) => return Ok(()),
            None => {
                return Err(ArchiveError::Refused(format!(
                    "entry `{name}` has an empty name"
                )));
            }
        };
        if matches!(kind, EntryKind::Skip) {
            return Ok(());
        }
        if self.excludes.as_ref().is_some_and(|x| x.matches(&rel)) {
            self.excluded += 1;
            return Ok(());
        }
        let name = show_path(&rel);
        if let Some(j) = &self.judge
            && let Err(why) = j.check(&self.dest.join(&rel), crate::model::Level::Write)
        {
            return Err(ArchiveError::Refused(format!("entry `{name}`: {why}")));
        }
        match kind {
            EntryKind::Special(what) => Err(ArchiveError::Refused(format!(
                "entry `{name}` is a {what}: device and fifo entries are refused"
            ))),
            EntryKind::Unsupported(what) => Err(ArchiveError::Refused(format!(
                "entry `{name}` has a type plangate does not extract ({what})"
            ))),
            EntryKind::Skip => Ok(()),
            EntryKind::Dir => {
                self.check_parents(&rel, &name)?;
                match self.staged.get(&rel) {
                    Some(Staged::Dir) => Ok(()),
                    Some(_) => Err(ArchiveError::Refused(format!(
                        "entry `{name}` is a directory, but an earlier entry of that name is not"
                    ))),
                    None => self.make_dirs(&rel),
                }
            }
            EntryKind::File { declared, mode } => {
                self.check_parents(&rel, &name)?;
                self.make_room(&rel, &name)?;
                self.write_file(&rel, &name, data, declared, mode)?;
                self.staged.insert(rel, Staged::File);
                self.files.push(name);
                Ok(())
            }
            EntryKind::Symlink(target) => self.symlink(rel, name, target),
            EntryKind::Hardlink(target) => self.hardlink(rel, name, &target),
        }
    }

    /// Stage a symlink entry: its target must stay inside the destination by
    /// name; it is created after every other entry.
    fn symlink(&mut self, rel: PathBuf, name: String, target: Vec<u8>) -> Result<(), ArchiveError> {
        self.check_parents(&rel, &name)?;
        let t = shown(&target);
        if target.is_empty() || target.contains(&0) {
            return Err(ArchiveError::Refused(format!(
                "symlink `{name}` has an empty or NUL target"
            )));
        }
        if target.first() == Some(&b'/') {
            return Err(ArchiveError::Refused(format!(
                "symlink `{name}` → `{t}` has an absolute target: it leaves the destination"
            )));
        }
        let dir = rel.parent().unwrap_or(Path::new(""));
        if lexical_target(dir, &target).is_none() {
            return Err(ArchiveError::Refused(format!(
                "symlink `{name}` → `{t}` leaves the destination"
            )));
        }
        match self.staged.get(&rel) {
            None => {}
            Some(Staged::Symlink(_)) if self.overwrite => {}
            Some(_) => {
                return Err(ArchiveError::Refused(format!(
                    "entry `{name}` appears more than once in the archive{}",
                    self.dup_hint()
                )));
            }
        }
        if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.make_dirs(parent)?;
        }
        // Created after every other entry, once the whole tree is known.
        if !matches!(self.staged.get(&rel), Some(Staged::Symlink(_))) {
            self.files.push(name);
        }
        self.staged.insert(rel, Staged::Symlink(target));
        Ok(())
    }

    /// Stage a hardlink entry: only to a regular file extracted before it.
    fn hardlink(&mut self, rel: PathBuf, name: String, target: &[u8]) -> Result<(), ArchiveError> {
        self.check_parents(&rel, &name)?;
        let t = shown(target);
        let trel = match normalize(target) {
            Ok(Some(p)) => p,
            Ok(None) => {
                return Err(ArchiveError::Refused(format!(
                    "hardlink `{name}` has an empty target"
                )));
            }
            Err(why) => {
                return Err(ArchiveError::Refused(format!(
                    "hardlink `{name}` → `{t}`: its target {why}"
                )));
            }
        };
        if self.staged.get(&trel) != Some(&Staged::File) {
            return Err(ArchiveError::Refused(format!(
                "hardlink `{name}` → `{t}` does not point at a regular file extracted before it: refused"
            )));
        }
        self.make_room(&rel, &name)?;
        fs::hard_link(
            self.staging.path().join(&trel),
            self.staging.path().join(&rel),
        )
        .map_err(|e| ArchiveError::failed(format!("hardlink `{name}` → `{t}`"), e))?;
        self.staged.insert(rel, Staged::File);
        self.files.push(name);
        Ok(())
    }

    fn dup_hint(&self) -> &'static str {
        if self.overwrite {
            " with another type"
        } else {
            " (set `overwrite: true` to keep the last one)"
        }
    }

    /// Refuse an entry under a symlink or a file the archive made earlier.
    fn check_parents(&self, rel: &Path, name: &str) -> Result<(), ArchiveError> {
        for a in rel.ancestors().skip(1) {
            if a.as_os_str().is_empty() {
                break;
            }
            match self.staged.get(a) {
                Some(Staged::Symlink(_)) => {
                    return Err(ArchiveError::Refused(format!(
                        "entry `{name}` passes through the symlink `{}` of the same archive: refused",
                        show_path(a)
                    )));
                }
                Some(Staged::File) => {
                    return Err(ArchiveError::Refused(format!(
                        "entry `{name}` needs `{}` to be a directory, but the archive made it a file",
                        show_path(a)
                    )));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A file or hardlink is about to be written at `rel`: refuse a clash,
    /// drop an earlier file of the same name when `overwrite` is set.
    fn make_room(&mut self, rel: &Path, name: &str) -> Result<(), ArchiveError> {
        match self.staged.get(rel) {
            None => {}
            Some(Staged::File) if self.overwrite => {
                fs::remove_file(self.staging.path().join(rel))
                    .map_err(|e| ArchiveError::failed(format!("entry `{name}`"), e))?;
                self.files.retain(|f| f != name);
            }
            Some(_) => {
                return Err(ArchiveError::Refused(format!(
                    "entry `{name}` appears more than once in the archive{}",
                    self.dup_hint()
                )));
            }
        }
        if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.make_dirs(parent)?;
        }
        Ok(())
    }

    /// Create `rel` and its parents in the staging directory.
    fn make_dirs(&mut self, rel: &Path) -> Result<(), ArchiveError> {
        let mut cur = PathBuf::new();
        for c in rel.iter() {
            cur.push(c);
            if self.staged.contains_key(&cur) {
                continue;
            }
            match fs::create_dir(self.staging.path().join(&cur)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(ArchiveError::Refused(format!(
                        "cannot create `{}`: {e}",
                        show_path(&cur)
                    )));
                }
            }
            self.staged.insert(cur.clone(), Staged::Dir);
            self.directories += 1;
        }
        Ok(())
    }

    /// Copy an entry's data into a new file, counting every byte.
    fn write_file(
        &mut self,
        rel: &Path,
        name: &str,
        data: &mut dyn Read,
        declared: Option<u64>,
        mode: u32,
    ) -> Result<(), ArchiveError> {
        if mode & 0o7000 != 0 {
            self.dropped_modes += 1;
        }
        let perm = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
        let mut f: File = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(perm)
            .open(self.staging.path().join(rel))
            .map_err(|e| ArchiveError::failed(format!("entry `{name}`: cannot create it"), e))?;
        let mut buf = vec![0u8; 64 * 1024];
        let mut total: u64 = 0;
        loop {
            let n = match data.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // The zip crate checks declared sizes too, and may see the lie first.
                    if let Some(d) = declared
                        && zip_size_lie(&e)
                    {
                        return Err(ArchiveError::Refused(format!(
                            "entry `{name}` holds more data than its header declares ({d} bytes): refused"
                        )));
                    }
                    return Err(self.meter.explain(ArchiveError::failed(
                        format!("entry `{name}`: cannot read it"),
                        e,
                    )));
                }
            };
            total += n as u64;
            if let Some(d) = declared
                && total > d
            {
                return Err(ArchiveError::Refused(format!(
                    "entry `{name}` holds more data than its header declares ({d} bytes): refused"
                )));
            }
            if self.count_entry_bytes {
                self.meter
                    .add_expanded(n as u64)
                    .map_err(|e| self.meter.explain(ArchiveError::Limit(e.to_string())))?;
            }
            self.meter
                .add_written(n as u64, name)
                .map_err(|e| self.meter.explain(ArchiveError::Limit(e.to_string())))?;
            f.write_all(&buf[..n])
                .map_err(|e| ArchiveError::failed(format!("entry `{name}`: cannot write it"), e))?;
        }
        Ok(())
    }

    /// Create the symlinks, check the destination and move everything into
    /// place. Nothing reaches the destination before this succeeds up to the
    /// first rename.
    pub(super) fn finish(&mut self) -> Result<Extracted, ArchiveError> {
        self.meter.stopped()?;
        let links: Vec<(PathBuf, Vec<u8>)> = self
            .staged
            .iter()
            .filter_map(|(p, s)| match s {
                Staged::Symlink(t) => Some((p.clone(), t.clone())),
                _ => None,
            })
            .collect();
        for (p, target) in &links {
            let start: Vec<OsString> = p
                .parent()
                .unwrap_or(Path::new(""))
                .iter()
                .map(OsStr::to_owned)
                .collect();
            let mut hops = 0;
            if let Err(why) = self.resolve(start, target, &mut hops) {
                return Err(ArchiveError::Refused(format!(
                    "symlink `{}` → `{}` {why}",
                    show_path(p),
                    shown(target)
                )));
            }
        }
        for (p, target) in &links {
            std::os::unix::fs::symlink(OsStr::from_bytes(target), self.staging.path().join(p))
                .map_err(|e| ArchiveError::failed(format!("symlink `{}`", show_path(p)), e))?;
            self.symlinks += 1;
        }
        if !links.is_empty() {
            let staged = |r: &Path| {
                self.staged.get(r).map(|s| match s {
                    Staged::Symlink(t) => super::links::Node::Link(t.clone()),
                    _ => super::links::Node::Other,
                })
            };
            super::links::check_existing(
                &self.workspace,
                &self.dest,
                self.staging.path(),
                &staged,
                &self.meter.stop,
            )?;
        }
        let moves = self.plan_moves()?;
        for p in &moves {
            fs::rename(self.staging.path().join(p), self.dest.join(p)).map_err(|e| {
                ArchiveError::Failed {
                    what: format!("cannot move `{}` into the destination", show_path(p)),
                    source: format!("{e} (entries moved before it stay)").into(),
                }
            })?;
            self.moved += 1;
        }
        if self.dropped_modes > 0 {
            self.warnings.push(format!(
                "setuid/setgid/sticky bits dropped from {} file(s); files are written 0644, or 0755 when executable",
                self.dropped_modes
            ));
        }
        if self.excluded > 0 {
            self.warnings.push(format!(
                "{} entr{} left out by exclude_patterns",
                self.excluded,
                if self.excluded == 1 { "y" } else { "ies" }
            ));
        }
        Ok(Extracted {
            files: std::mem::take(&mut self.files),
            excluded: self.excluded,
            directories: self.directories,
            symlinks: self.symlinks,
            written: self.meter.written(),
            warnings: std::mem::take(&mut self.warnings),
        })
    }

    /// Resolve a symlink target the way the kernel will: component by
    /// component, through the archive's symlinks and the destination's
    /// existing ones; `Err` when it leaves the destination.
    fn resolve(
        &self,
        mut stack: Vec<OsString>,
        target: &[u8],
        hops: &mut u32,
    ) -> Result<Vec<OsString>, ArchiveError> {
        if target.first() == Some(&b'/') {
            return Err(ArchiveError::Refused(
                "has an absolute target: it leaves the destination".to_owned(),
            ));
        }
        for part in target.split(|b| *b == b'/') {
            match part {
                b"" | b"." => {}
                b".." => {
                    if stack.pop().is_none() {
                        return Err(ArchiveError::Refused("leaves the destination".to_owned()));
                    }
                }
                name => {
                    stack.push(OsStr::from_bytes(name).to_owned());
                    let p: PathBuf = stack.iter().collect();
                    let next = match self.staged.get(&p) {
                        Some(Staged::Symlink(t)) => DestLink::Relative(t.clone()),
                        Some(_) => DestLink::None,
                        None => self.dest_link(&p)?,
                    };
                    if matches!(next, DestLink::None) {
                        continue;
                    }
                    *hops += 1;
                    if *hops > MAX_HOPS {
                        return Err(ArchiveError::Refused(
                            "goes through too many symlinks".to_owned(),
                        ));
                    }
                    stack.pop();
                    stack = match next {
                        DestLink::Relative(t) => self.resolve(stack, &t, hops)?,
                        DestLink::FromRoot(t) => self.resolve(Vec::new(), &t, hops)?,
                        DestLink::None => stack,
                    };
                }
            }
        }
        Ok(stack)
    }

    /// Whether the destination already has a symlink at `rel`, and where it points.
    fn dest_link(&self, rel: &Path) -> Result<DestLink, ArchiveError> {
        let at = self.dest.join(rel);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = fs::read_link(&at).map_err(|e| {
                    ArchiveError::failed(
                        format!("cannot read the existing symlink `{}`", show_path(rel)),
                        e,
                    )
                })?;
                if t.is_absolute() {
                    match t.strip_prefix(&self.dest) {
                        Ok(inside) => {
                            Ok(DestLink::FromRoot(inside.as_os_str().as_bytes().to_vec()))
                        }
                        Err(_) => Err(ArchiveError::Refused(format!(
                            "leaves the destination through its existing symlink `{}`",
                            show_path(rel)
                        ))),
                    }
                } else {
                    Ok(DestLink::Relative(t.as_os_str().as_bytes().to_vec()))
                }
            }
            _ => Ok(DestLink::None),
        }
    }

    /// What to rename into the destination (a new directory moves whole),
    /// after checking every clash with what is already there.
    fn plan_moves(&self) -> Result<Vec<PathBuf>, ArchiveError> {
        let mut moves: Vec<PathBuf> = Vec::new();
        let mut moved_dir: Option<&Path> = None;
        for (p, kind) in &self.staged {
            if moved_dir.is_some_and(|d| p.starts_with(d)) {
                continue;
            }
            let name = show_path(p);
            let is_dir = *kind == Staged::Dir;
            match fs::symlink_metadata(self.dest.join(p)) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    moves.push(p.clone());
                    if is_dir {
                        moved_dir = Some(p);
                    }
                }
                Err(e) => {
                    return Err(ArchiveError::Refused(format!(
                        "cannot check `{name}` in the destination: {e}"
                    )));
                }
                Ok(m) if m.file_type().is_symlink() && is_dir => {
                    return Err(ArchiveError::Refused(format!(
                        "`{name}` is a symlink in the destination: refusing to extract into it"
                    )));
                }
                Ok(m) if m.is_dir() => {
                    if !is_dir {
                        return Err(ArchiveError::Refused(format!(
                            "`{name}` is a directory in the destination; the archive has a file there"
                        )));
                    }
                }
                Ok(_) if is_dir => {
                    return Err(ArchiveError::Refused(format!(
                        "`{name}` is a file in the destination; the archive has a directory there"
                    )));
                }
                Ok(_) => {
                    if !self.overwrite {
                        return Err(ArchiveError::Refused(format!(
                            "`{name}` already exists in the destination (set `overwrite: true` to replace it)"
                        )));
                    }
                    moves.push(p.clone());
                }
            }
        }
        Ok(moves)
    }

    /// Read a zip symlink's target (small, counted).
    pub(super) fn read_link_target(
        &self,
        name: &[u8],
        data: &mut dyn Read,
    ) -> Result<Vec<u8>, ArchiveError> {
        let mut t = Vec::new();
        data.take(MAX_LINK_TARGET + 1)
            .read_to_end(&mut t)
            .map_err(|e| {
                self.meter.explain(ArchiveError::failed(
                    format!("symlink `{}`", shown(name)),
                    e,
                ))
            })?;
        if t.len() as u64 > MAX_LINK_TARGET {
            return Err(ArchiveError::Refused(format!(
                "symlink `{}` has a target longer than {MAX_LINK_TARGET} bytes",
                shown(name)
            )));
        }
        self.meter.add_expanded(t.len() as u64)?;
        Ok(t)
    }
}

/// What an extraction did.
#[derive(Debug, Default)]
pub(super) struct Extracted {
    /// Non-directory entries written (files, symlinks, hardlinks).
    pub files: Vec<String>,
    /// Entries left out by `exclude_patterns`.
    pub excluded: u64,
    /// Directories created.
    pub directories: u64,
    /// Symlinks created.
    pub symlinks: u64,
    /// Bytes written.
    pub written: u64,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// Whether a read error is the zip crate's own declared-size check. The crate
/// reports it as `InvalidData` with a fixed text and no typed error (the same
/// kind covers checksum failures), so this is the one place that reads an
/// error's text; the `zip_size_lie` case of `tests/integration/tool_archive.rs`
/// fails if the crate changes its wording.
fn zip_size_lie(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::InvalidData
        && e.to_string()
            .contains("larger than its declared uncompressed size")
}
