//! The `archive` tool (design 002, 2.6): `create`, `extract` and `list` of
//! zip and tar archives (tar plain, gzip or bzip2), with exclude patterns and
//! `overwrite`.
//!
//! Extraction is done entry by entry by plangate ([`extract`]) into a staging
//! directory inside the destination, renamed into place only when the whole
//! archive passed every rule: nothing leaves the destination (`..`, absolute
//! names, escaping symlinks and hardlinks, paths through symlinks, devices and
//! fifos are refused with the entry's name and the rule), and the bytes
//! actually written, the entry count and the expansion ratio are capped. A
//! refused archive leaves the destination as it was.

mod create;
pub(crate) mod error;
mod extract;
mod links;
pub(crate) mod names;
pub(crate) mod spec;

use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{StepContext, Stop, ToolReturn};
use crate::model::{Level, StepOutcome, StepStatus};
use crate::tools::params::archive::{ArchiveAction, ArchiveFormat, ArchiveOperation, Compression};
pub(crate) use error::ArchiveError;

use extract::{EntryKind, Extractor, Limits, Meter, Metered};
use names::{Excludes, lexical_target, normalize, show_path, shown};

/// Default `max_total_bytes`: 1 GiB.
pub(crate) const DEFAULT_MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Default `max_entries`.
pub(crate) const DEFAULT_MAX_ENTRIES: u64 = 100_000;
/// Default `max_ratio`.
pub(crate) const DEFAULT_MAX_RATIO: u64 = 200;
/// Most names kept in `files` (all are counted in `files_processed`).
const MAX_FILES_LISTED: usize = 10_000;
/// Most warnings kept.
const MAX_WARNINGS: usize = 100;

/// What the tool found out, for `result.json`.
#[derive(Default)]
struct Report {
    format: Option<ArchiveFormat>,
    compression: Option<String>,
    destination: Option<String>,
    files: Vec<String>,
    directories: u64,
    symlinks: Option<u64>,
    entries: Option<u64>,
    excluded: u64,
    total_size: u64,
    compressed_size: u64,
    warnings: Vec<String>,
    destination_unchanged: Option<bool>,
}

/// Run the operation.
pub(crate) fn run(a: &ArchiveAction, ctx: &StepContext, stop: &Stop) -> ToolReturn {
    let mut outcome = StepOutcome::new(std::time::SystemTime::now());
    let mut report = Report::default();
    let res = match a.params.operation {
        ArchiveOperation::Create => run_create(a, ctx, stop, &mut report),
        ArchiveOperation::Extract => run_extract(a, ctx, stop, &mut report),
        ArchiveOperation::List => run_list(a, ctx, stop, &mut report),
    };
    let error = res.err().map(|e| e.to_string());
    outcome.status = if error.is_none() {
        StepStatus::Success
    } else {
        StepStatus::Failed
    };
    outcome.error.clone_from(&error);
    ToolReturn {
        outcome,
        result: Some(result_json(a, report, error)),
    }
}

fn result_json(a: &ArchiveAction, mut r: Report, error: Option<String>) -> Value {
    let processed = r.files.len();
    r.files.sort();
    let truncated = r.files.len() > MAX_FILES_LISTED;
    r.files.truncate(MAX_FILES_LISTED);
    if r.warnings.len() > MAX_WARNINGS {
        let more = r.warnings.len() - MAX_WARNINGS;
        r.warnings.truncate(MAX_WARNINGS);
        r.warnings.push(format!("… and {more} more warning(s)"));
    }
    let ratio = if r.compressed_size == 0 {
        0.0
    } else {
        (r.total_size as f64 / r.compressed_size as f64 * 1000.0).round() / 1000.0
    };
    let mut v = json!({
        "success": error.is_none(),
        "operation": match a.params.operation {
            ArchiveOperation::Create => "create",
            ArchiveOperation::Extract => "extract",
            ArchiveOperation::List => "list",
        },
        "archive": show_path(&a.archive),
        "format": r.format.map(ArchiveFormat::as_str),
        "compression": r.compression,
        "files_processed": processed,
        "directories": r.directories,
        "excluded": r.excluded,
        "total_size": r.total_size,
        "compressed_size": r.compressed_size,
        "compression_ratio": ratio,
        "files": r.files,
        "files_truncated": truncated,
        "warnings": r.warnings,
    });
    if let Some(obj) = v.as_object_mut() {
        if let Some(d) = r.destination {
            obj.insert("destination".into(), json!(d));
        }
        if let Some(s) = r.symlinks {
            obj.insert("symlinks".into(), json!(s));
        }
        if let Some(e) = r.entries {
            obj.insert("entries".into(), json!(e));
        }
        if let Some(u) = r.destination_unchanged {
            obj.insert("destination_unchanged".into(), json!(u));
        }
        if let Some(e) = error {
            obj.insert("error".into(), json!(e));
        }
    }
    v
}

/// The limits of the step.
fn limits(a: &ArchiveAction) -> Limits {
    let p = &a.params;
    Limits {
        max_total_bytes: p.max_total_bytes.unwrap_or(DEFAULT_MAX_TOTAL_BYTES),
        max_entries: p.max_entries.unwrap_or(DEFAULT_MAX_ENTRIES),
        max_ratio: p.max_ratio.unwrap_or(DEFAULT_MAX_RATIO),
    }
}

/// A path inside the workspace that may not exist yet: every existing
/// component is resolved (symlinks followed and checked to stay inside), the
/// missing rest is returned as is. Nothing is created.
fn resolve_for_write(
    ws: &Path,
    rel: &Path,
    what: &str,
) -> Result<(PathBuf, PathBuf), ArchiveError> {
    let mut cur = ws.to_path_buf();
    let mut missing = PathBuf::new();
    for c in rel.iter() {
        if !missing.as_os_str().is_empty() {
            missing.push(c);
            continue;
        }
        let next = cur.join(c);
        match fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                let real = next
                    .canonicalize()
                    .map_err(|e| ArchiveError::failed(format!("{what} `{}`", show_path(rel)), e))?;
                if !real.starts_with(ws) {
                    return Err(ArchiveError::Params(format!(
                        "{what} `{}` resolves outside the workspace (through a symlink)",
                        show_path(rel)
                    )));
                }
                if !real.is_dir() {
                    return Err(ArchiveError::Params(format!(
                        "{what} `{}`: a part of it is not a directory",
                        show_path(rel)
                    )));
                }
                cur = real;
            }
            Ok(m) if m.is_dir() => cur = next,
            Ok(_) => {
                return Err(ArchiveError::Params(format!(
                    "{what} `{}`: a part of it is a file, not a directory",
                    show_path(rel)
                )));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(c),
            Err(e) => {
                return Err(ArchiveError::Params(format!(
                    "{what} `{}`: {e}",
                    show_path(rel)
                )));
            }
        }
    }
    Ok((cur, missing))
}

/// Create `missing` under `base` (all real directories); returns the full path.
fn make_dirs(base: &Path, missing: &Path, what: &str, rel: &Path) -> Result<PathBuf, ArchiveError> {
    let full = base.join(missing);
    fs::create_dir_all(&full).map_err(|e| {
        ArchiveError::failed(format!("cannot create the {what} `{}`", show_path(rel)), e)
    })?;
    Ok(full)
}

/// Remove the directories [`make_dirs`] created, deepest first, if still empty.
fn unmake_dirs(base: &Path, missing: &Path) {
    let mut p = missing.to_path_buf();
    while !p.as_os_str().is_empty() {
        if fs::remove_dir(base.join(&p)).is_err() {
            return;
        }
        p.pop();
    }
}

fn run_create(
    a: &ArchiveAction,
    ctx: &StepContext,
    stop: &Stop,
    report: &mut Report,
) -> Result<(), ArchiveError> {
    let p = &a.params;
    let ws = &ctx.env.workspace;
    let name = a.archive.file_name().ok_or_else(|| {
        ArchiveError::Params(format!(
            "`archive_path` `{}` does not name a file",
            p.archive_path
        ))
    })?;
    let by_name = ArchiveFormat::from_name(&p.archive_path);
    let format = p.format.or(by_name.map(|b| b.0)).ok_or_else(|| {
        ArchiveError::Params(format!(
            "cannot tell the format of `{}`: name it .zip, .tar, .tar.gz, .tgz or .tar.bz2, or set `format`",
            p.archive_path
        ))
    })?;
    let compression = p
        .compression
        .or(by_name.and_then(|b| b.1))
        .unwrap_or(Compression::Gzip);
    if format == ArchiveFormat::Zip && compression == Compression::Bz2 {
        return Err(ArchiveError::Params(
            "zip entries are deflated (`compression: gzip`) or stored (`none`); bz2 is for tar"
                .into(),
        ));
    }
    report.format = Some(format);
    report.compression = Some(match (format, compression) {
        (ArchiveFormat::Zip, Compression::None) => "none".to_owned(),
        (ArchiveFormat::Zip, _) => "deflate".to_owned(),
        (ArchiveFormat::Tar, c) => c.as_str().to_owned(),
    });
    let excludes = Excludes::new(&p.exclude_patterns)?;
    let mut sources = Vec::new();
    for s in &a.sources {
        ctx.may(&ws.join(s), Level::Read)
            .map_err(|why| ArchiveError::Refused(format!("source `{}`: {why}", display_rel(s))))?;
        let root = ws.join(s).canonicalize().map_err(|e| {
            ArchiveError::failed(format!("source `{}` cannot be read", display_rel(s)), e)
        })?;
        if !root.starts_with(ws) {
            return Err(ArchiveError::Params(format!(
                "source `{}` resolves outside the workspace",
                display_rel(s)
            )));
        }
        sources.push(create::Source {
            root,
            prefix: s.clone(),
        });
    }
    let parent_rel = a.archive.parent().unwrap_or(Path::new(""));
    let (base, missing) = resolve_for_write(ws, parent_rel, "the archive's directory")?;
    let target_rel = missing.join(name);
    if missing.as_os_str().is_empty() {
        match fs::symlink_metadata(base.join(&target_rel)) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(ArchiveError::Params(format!(
                    "`{}` is a symlink: refusing to write the archive through it",
                    p.archive_path
                )));
            }
            Ok(m) if m.is_dir() => {
                return Err(ArchiveError::Params(format!(
                    "`{}` is a directory",
                    p.archive_path
                )));
            }
            Ok(_) if !p.overwrite => {
                return Err(ArchiveError::Params(format!(
                    "`{}` already exists (set `overwrite: true` to replace it)",
                    p.archive_path
                )));
            }
            _ => {}
        }
    }
    let dir = make_dirs(&base, &missing, "archive's directory", parent_rel)?;
    let archive = dir.join(name);
    let out_dir = ctx
        .out_dir
        .canonicalize()
        .unwrap_or_else(|_| ctx.out_dir.clone());
    let spec = create::CreateSpec {
        archive,
        sources,
        format,
        compression,
        excludes: excludes.as_ref(),
        overwrite: p.overwrite,
        skip: vec![out_dir],
        judge: ctx.judge.as_deref(),
    };
    let made = create::create(&spec, stop);
    let made = match made {
        Ok(m) => m,
        Err(e) => {
            unmake_dirs(&base, &missing);
            return Err(e);
        }
    };
    report.files = made.files;
    report.directories = made.directories;
    report.total_size = made.total_size;
    report.compressed_size = made.compressed_size;
    report.excluded = made.excluded;
    report.warnings = made.warnings;
    Ok(())
}

fn display_rel(p: &Path) -> String {
    if p.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        show_path(p)
    }
}

/// Open the archive to read: inside the workspace after following symlinks, a regular file.
fn open_archive(a: &ArchiveAction, ctx: &StepContext) -> Result<(PathBuf, u64), ArchiveError> {
    let real = super::workspace_file(&ctx.env.workspace, &a.archive)?;
    let size = fs::metadata(&real)
        .map(|m| m.len())
        .map_err(|e| ArchiveError::failed(format!("`{}`", a.params.archive_path), e))?;
    Ok((real, size))
}

/// The format and compression to read with: the parameters, else the
/// file's first bytes, else its name.
fn read_format(
    a: &ArchiveAction,
    real: &Path,
) -> Result<(ArchiveFormat, Compression), ArchiveError> {
    let p = &a.params;
    let mut head = [0u8; 512];
    let n = crate::regular::open(real)
        .and_then(|mut f| read_up_to(&mut f, &mut head))
        .map_err(|e| ArchiveError::failed(format!("`{}`", p.archive_path), e))?;
    let head = &head[..n];
    let sniffed = if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Some((ArchiveFormat::Zip, None))
    } else if head.starts_with(b"\x1f\x8b") {
        Some((ArchiveFormat::Tar, Some(Compression::Gzip)))
    } else if head.starts_with(b"BZh") {
        Some((ArchiveFormat::Tar, Some(Compression::Bz2)))
    } else if head.get(257..262) == Some(b"ustar") {
        Some((ArchiveFormat::Tar, Some(Compression::None)))
    } else {
        None
    };
    let by_name = ArchiveFormat::from_name(&p.archive_path);
    let format = p
        .format
        .or(sniffed.map(|s| s.0))
        .or(by_name.map(|b| b.0))
        .ok_or_else(|| {
            ArchiveError::Params(format!(
                "cannot tell the format of `{}` from its content or name: set `format`",
                p.archive_path
            ))
        })?;
    let compression = p
        .compression
        .or(sniffed.filter(|s| s.0 == format).and_then(|s| s.1))
        .or(by_name.filter(|b| b.0 == format).and_then(|b| b.1))
        .unwrap_or(Compression::Gzip);
    Ok((format, compression))
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The decompressed stream of a tar.
fn tar_stream(real: &Path, compression: Compression) -> Result<Box<dyn Read>, ArchiveError> {
    let f = BufReader::new(crate::regular::open(real)?);
    Ok(match compression {
        Compression::None => Box::new(f),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(f)),
        Compression::Bz2 => Box::new(bzip2::read::MultiBzDecoder::new(f)),
    })
}

/// Most decompressed bytes a compressed tar stream may hold: the byte limit
/// plus room for headers, padding and excluded entries. It bounds what the
/// tar crate reads into memory for a long name or a pax header (a plain
/// tar's are bounded by its own size, so it has no cap).
fn stream_cap(l: &Limits, compression: Compression) -> Option<u64> {
    (compression != Compression::None).then(|| {
        l.max_total_bytes
            .saturating_add(l.max_total_bytes / 4)
            .saturating_add(64 << 20)
    })
}

/// What a tar entry is.
fn tar_kind(e: &tar::Entry<'_, impl Read>) -> EntryKind {
    use tar::EntryType as T;
    let h = e.header();
    let link = || {
        e.link_name_bytes()
            .map(|l| l.into_owned())
            .unwrap_or_default()
    };
    match h.entry_type() {
        T::Regular | T::Continuous | T::GNUSparse => {
            if e.path_bytes().ends_with(b"/") {
                EntryKind::Dir
            } else {
                EntryKind::File {
                    declared: None,
                    mode: h.mode().unwrap_or(0o644),
                }
            }
        }
        T::Directory => EntryKind::Dir,
        T::Symlink => EntryKind::Symlink(link()),
        T::Link => EntryKind::Hardlink(link()),
        T::Char => EntryKind::Special("character device"),
        T::Block => EntryKind::Special("block device"),
        T::Fifo => EntryKind::Special("fifo"),
        T::XGlobalHeader => EntryKind::Skip,
        other => EntryKind::Unsupported(format!("tar type {:?}", other.as_byte() as char)),
    }
}

/// What a zip entry is (a symlink's target is read by the caller).
fn zip_kind<R: Read>(f: &zip::read::ZipFile<'_, R>) -> EntryKind {
    let mode = f.unix_mode();
    if f.is_dir() {
        return EntryKind::Dir;
    }
    if f.is_symlink() {
        return EntryKind::Symlink(Vec::new());
    }
    match mode.map(|m| m & 0o170_000) {
        Some(0o020_000) => EntryKind::Special("character device"),
        Some(0o060_000) => EntryKind::Special("block device"),
        Some(0o010_000) => EntryKind::Special("fifo"),
        Some(0o140_000) => EntryKind::Special("socket"),
        _ => EntryKind::File {
            declared: Some(f.size()),
            mode: mode.unwrap_or(0o644),
        },
    }
}

fn open_zip(real: &Path) -> Result<zip::ZipArchive<BufReader<File>>, ArchiveError> {
    let f = crate::regular::open(real)?;
    zip::ZipArchive::new(BufReader::new(f))
        .map_err(|e| ArchiveError::failed("not a readable zip", e))
}

/// Two central-directory entries of one name: tools disagree on which one
/// wins (the zip crate keeps one and hides the other), so the archive is refused.
fn refuse_duplicates(za: &zip::ZipArchive<BufReader<File>>) -> Result<(), ArchiveError> {
    if za.has_duplicate_names() {
        return Err(ArchiveError::Refused(
            "the zip names one entry more than once in its central directory: refused (which copy is extracted differs between tools)".to_owned(),
        ));
    }
    Ok(())
}

fn zip_name(za: &zip::ZipArchive<BufReader<File>>, i: usize) -> Vec<u8> {
    za.name_for_index(i)
        .and_then(Result::ok)
        .map(|n| n.into_owned().into_bytes())
        .unwrap_or_else(|| format!("#{i}").into_bytes())
}

fn run_extract(
    a: &ArchiveAction,
    ctx: &StepContext,
    stop: &Stop,
    report: &mut Report,
) -> Result<(), ArchiveError> {
    let p = &a.params;
    let ws = &ctx.env.workspace;
    let (real, size) = open_archive(a, ctx)?;
    ctx.may(&ws.join(&a.archive), Level::Read)
        .map_err(|why| ArchiveError::Refused(format!("`{}`: {why}", p.archive_path)))?;
    let (format, compression) = read_format(a, &real)?;
    report.format = Some(format);
    report.compression = Some(match format {
        ArchiveFormat::Tar => compression.as_str().to_owned(),
        ArchiveFormat::Zip => "deflate".to_owned(),
    });
    report.compressed_size = size;
    let dest_rel = a.destination_or_parent();
    report.destination = Some(display_rel(&dest_rel));
    let excludes = Excludes::new(&p.exclude_patterns)?;
    let (base, missing) = resolve_for_write(ws, &dest_rel, "destination")?;
    let dest = make_dirs(&base, &missing, "destination", &dest_rel)?;
    let limits = limits(a);
    let res = {
        let cap = (format == ArchiveFormat::Tar)
            .then(|| stream_cap(&limits, compression))
            .flatten();
        let meter = Meter::new(limits, size, cap, stop.clone());
        let ex = Extractor::new(
            &dest,
            ws,
            ctx.judge.clone(),
            p.overwrite,
            excludes,
            &meter,
            format == ArchiveFormat::Zip,
        );
        match ex {
            Ok(mut ex) => {
                let read = match format {
                    ArchiveFormat::Tar => extract_tar(&real, compression, &mut ex, &meter),
                    ArchiveFormat::Zip => extract_zip(&real, &mut ex, &meter, report),
                };
                let res = read.and_then(|()| ex.finish());
                report.destination_unchanged = Some(ex.moved == 0 || res.is_ok());
                report.entries = Some(ex.entries());
                res
            }
            Err(e) => Err(e),
        }
    };
    match res {
        Ok(done) => {
            report.destination_unchanged = None;
            report.files = done.files;
            report.directories = done.directories;
            report.symlinks = Some(done.symlinks);
            report.total_size = done.written;
            report.excluded = done.excluded;
            report.warnings.extend(done.warnings);
            Ok(())
        }
        Err(e) => {
            if report.destination_unchanged != Some(false) {
                report.destination_unchanged = Some(true);
                unmake_dirs(&base, &missing);
            }
            Err(e)
        }
    }
}

fn extract_tar(
    real: &Path,
    compression: Compression,
    ex: &mut Extractor<'_>,
    meter: &Meter,
) -> Result<(), ArchiveError> {
    let stream = tar_stream(real, compression)?;
    let mut ar = tar::Archive::new(Metered {
        inner: stream,
        meter,
    });
    let entries = ar
        .entries()
        .map_err(|e| meter.explain(ArchiveError::failed("not a readable tar", e)))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| {
            meter.explain(ArchiveError::failed(
                format!("cannot read the tar after {} entries", ex.entries()),
                e,
            ))
        })?;
        let name = entry.path_bytes().into_owned();
        let kind = tar_kind(&entry);
        ex.entry(&name, kind, &mut entry)?;
    }
    Ok(())
}

fn extract_zip(
    real: &Path,
    ex: &mut Extractor<'_>,
    meter: &Meter,
    report: &mut Report,
) -> Result<(), ArchiveError> {
    let mut za = open_zip(real)?;
    refuse_duplicates(&za)?;
    meter.entry_count_ok(za.len() as u64)?;
    let mut stored_only = true;
    for i in 0..za.len() {
        let name = zip_name(&za, i);
        let mut f = za
            .by_index(i)
            .map_err(|e| ArchiveError::failed(format!("entry `{}`", shown(&name)), e))?;
        if f.compression() != zip::CompressionMethod::Stored {
            stored_only = false;
        }
        let kind = match zip_kind(&f) {
            EntryKind::Symlink(_) => EntryKind::Symlink(ex.read_link_target(&name, &mut f)?),
            k => k,
        };
        ex.entry(&name, kind, &mut f)?;
    }
    if stored_only {
        report.compression = Some("none".to_owned());
    }
    Ok(())
}

/// What `list` says about an entry extract would refuse.
fn list_warning(raw: &[u8], kind: &EntryKind) -> Option<String> {
    let name = shown(raw);
    let rel = match normalize(raw) {
        Err(why) => return Some(format!("entry `{name}` {why}: extract would refuse it")),
        Ok(rel) => rel.unwrap_or_default(),
    };
    match kind {
        EntryKind::Special(what) => Some(format!(
            "entry `{name}` is a {what}: extract would refuse it"
        )),
        EntryKind::Unsupported(what) => Some(format!(
            "entry `{name}` has a type plangate does not extract ({what})"
        )),
        EntryKind::Symlink(t)
            if lexical_target(rel.parent().unwrap_or(Path::new("")), t).is_none() =>
        {
            Some(format!(
                "symlink `{name}` → `{}` leaves the destination: extract would refuse it",
                shown(t)
            ))
        }
        EntryKind::Hardlink(t) if !matches!(normalize(t), Ok(Some(_))) => Some(format!(
            "hardlink `{name}` → `{}` leaves the destination: extract would refuse it",
            shown(t)
        )),
        _ => None,
    }
}

fn run_list(
    a: &ArchiveAction,
    ctx: &StepContext,
    stop: &Stop,
    report: &mut Report,
) -> Result<(), ArchiveError> {
    let (real, size) = open_archive(a, ctx)?;
    let (format, compression) = read_format(a, &real)?;
    report.format = Some(format);
    report.compressed_size = size;
    let limits = limits(a);
    let mut entries: u64 = 0;
    let note = |raw: &[u8], kind: &EntryKind, declared: u64, report: &mut Report| {
        if let Some(w) = list_warning(raw, kind) {
            report.warnings.push(w);
        }
        match kind {
            EntryKind::Dir => report.directories += 1,
            EntryKind::Skip => {}
            EntryKind::File { .. } => {
                report.files.push(shown(raw));
                report.total_size += declared;
            }
            _ => report.files.push(shown(raw)),
        }
    };
    match format {
        ArchiveFormat::Tar => {
            report.compression = Some(compression.as_str().to_owned());
            let meter = Meter::new(limits, size, stream_cap(&limits, compression), stop.clone());
            let stream = tar_stream(&real, compression)?;
            let mut ar = tar::Archive::new(Metered {
                inner: stream,
                meter: &meter,
            });
            let iter = ar
                .entries()
                .map_err(|e| meter.explain(ArchiveError::failed("not a readable tar", e)))?;
            for entry in iter {
                let entry = entry.map_err(|e| {
                    meter.explain(ArchiveError::failed(
                        format!("cannot read the tar after {entries} entries"),
                        e,
                    ))
                })?;
                entries += 1;
                meter.entry_count_ok(entries)?;
                let raw = entry.path_bytes().into_owned();
                let kind = tar_kind(&entry);
                note(&raw, &kind, entry.size(), report);
            }
        }
        ArchiveFormat::Zip => {
            let mut za = open_zip(&real)?;
            refuse_duplicates(&za)?;
            let meter = Meter::new(limits, size, None, stop.clone());
            meter.entry_count_ok(za.len() as u64)?;
            let mut stored_only = true;
            for i in 0..za.len() {
                meter.stopped()?;
                let name = zip_name(&za, i);
                let (kind, method, declared) = {
                    let f = za.by_index_raw(i).map_err(|e| {
                        ArchiveError::failed(format!("entry `{}`", shown(&name)), e)
                    })?;
                    (zip_kind(&f), f.compression(), f.size())
                };
                entries += 1;
                stored_only &= method == zip::CompressionMethod::Stored;
                let kind = match kind {
                    EntryKind::Symlink(_) => {
                        // A small target, read (and decompressed) to check where it points.
                        let mut t = Vec::new();
                        if let Ok(f) = za.by_index(i) {
                            let _ = f.take(4096).read_to_end(&mut t);
                        }
                        EntryKind::Symlink(t)
                    }
                    k => k,
                };
                if !matches!(
                    method,
                    zip::CompressionMethod::Stored | zip::CompressionMethod::Deflated
                ) {
                    report.warnings.push(format!(
                        "entry `{}` uses compression {method}: plangate can list it but not extract it",
                        shown(&name)
                    ));
                }
                note(&name, &kind, declared, report);
            }
            report.compression = Some(if stored_only { "none" } else { "deflate" }.to_owned());
        }
    }
    report.entries = Some(entries);
    Ok(())
}
