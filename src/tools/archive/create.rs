//! `create`: walk the sources (walkdir: no `.gitignore` here, an archive
//! packs what it is told), leave out what `exclude_patterns` name, the
//! archive itself and plangate's output directory, and write the archive to a
//! temporary file beside it that is renamed into place only when complete.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::error::ArchiveError;
use super::names::{Excludes, lexical_target, show_path, shown};
use crate::tools::Stop;
use crate::tools::params::archive::{ArchiveFormat, Compression};

/// One source: where it is on disk and what its entries are called.
pub(super) struct Source {
    /// Canonical, inside the workspace.
    pub root: PathBuf,
    /// Name prefix in the archive (the workspace-relative path as given; empty for `.`).
    pub prefix: PathBuf,
}

/// What to create.
pub(super) struct CreateSpec<'a> {
    /// Where the archive goes (its directory is canonical and exists).
    pub archive: PathBuf,
    /// The sources.
    pub sources: Vec<Source>,
    /// Format.
    pub format: ArchiveFormat,
    /// Compression (tar: none/gzip/bz2; zip: none = stored, else deflate).
    pub compression: Compression,
    /// What to leave out.
    pub excludes: Option<&'a Excludes>,
    /// Replace an existing archive.
    pub overwrite: bool,
    /// Paths never packed (plangate's output directory).
    pub skip: Vec<PathBuf>,
    /// The permission rules: paths they deny reading are left out (None: no list in force).
    pub judge: Option<&'a crate::tools::judge::PathJudge>,
}

/// What `create` packed.
#[derive(Debug, Default)]
pub(super) struct Created {
    /// Non-directory entries, in archive order.
    pub files: Vec<String>,
    /// Paths left out because the permission rules deny reading them.
    pub withheld: u64,
    /// Directory entries.
    pub directories: u64,
    /// Bytes of file content packed.
    pub total_size: u64,
    /// Size of the archive written.
    pub compressed_size: u64,
    /// Entries left out by `exclude_patterns`.
    pub excluded: u64,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// The archive being written.
enum Sink {
    Tar(tar::Builder<Encoder>),
    Zip(Box<zip::ZipWriter<File>>),
}

/// The compressed stream under a tar.
enum Encoder {
    Plain(File),
    Gzip(flate2::write::GzEncoder<File>),
    Bz2(bzip2::write::BzEncoder<File>),
}

impl Write for Encoder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Encoder::Plain(f) => f.write(buf),
            Encoder::Gzip(e) => e.write(buf),
            Encoder::Bz2(e) => e.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Encoder::Plain(f) => f.flush(),
            Encoder::Gzip(e) => e.flush(),
            Encoder::Bz2(e) => e.flush(),
        }
    }
}

impl Encoder {
    fn finish(self) -> io::Result<File> {
        match self {
            Encoder::Plain(f) => Ok(f),
            Encoder::Gzip(e) => e.finish(),
            Encoder::Bz2(e) => e.finish(),
        }
    }
}

/// Exactly `len` bytes of a file: a file that grew is cut, one that shrank is
/// padded with zeros (and reported), so a tar header never lies. Polls `stop`.
struct Exact<'s> {
    inner: io::Take<File>,
    left: u64,
    shrank: bool,
    stop: &'s Stop,
}

impl Read for Exact<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.now() {
            return Err(io::Error::other("stopped (timeout or run stopped)"));
        }
        if self.left == 0 {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let mut n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            self.shrank = true;
            buf[..want].fill(0);
            n = want;
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Seconds since the epoch → zip's DOS date and time (UTC; zip's own range 1980–2107).
pub(super) fn zip_time(secs: i64) -> zip::DateTime {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    if !(1980..=2107).contains(&year) {
        return zip::DateTime::default();
    }
    zip::DateTime::from_date_and_time(
        year as u16,
        month as u8,
        day as u8,
        h as u8,
        m as u8,
        s as u8,
    )
    .unwrap_or_default()
}

/// Pack the sources. The archive appears only when complete.
pub(super) fn create(spec: &CreateSpec<'_>, stop: &Stop) -> Result<Created, ArchiveError> {
    let dir = spec.archive.parent().unwrap_or(Path::new("/"));
    let tmp = tempfile::Builder::new()
        .prefix(".plangate-archive-")
        .tempfile_in(dir)
        .map_err(|e| {
            ArchiveError::failed("cannot create a temporary file beside the archive", e)
        })?;
    let file = tmp
        .reopen()
        .map_err(|e| ArchiveError::failed("cannot open the temporary archive", e))?;
    let mut sink = match spec.format {
        ArchiveFormat::Tar => Sink::Tar(tar::Builder::new(match spec.compression {
            Compression::None => Encoder::Plain(file),
            Compression::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::default(),
            )),
            Compression::Bz2 => Encoder::Bz2(bzip2::write::BzEncoder::new(
                file,
                bzip2::Compression::default(),
            )),
        })),
        ArchiveFormat::Zip => Sink::Zip(Box::new(zip::ZipWriter::new(file))),
    };
    let mut skip: Vec<PathBuf> = spec.skip.clone();
    skip.push(tmp.path().to_path_buf());
    skip.push(spec.archive.clone());
    let mut out = Created::default();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut skipped_out_dir = false;
    for src in &spec.sources {
        let mut walk = walkdir::WalkDir::new(&src.root)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter();
        while let Some(item) = walk.next() {
            if stop.now() {
                return Err(ArchiveError::Limit(
                    "stopped before the archive was finished (timeout or run stopped)".into(),
                ));
            }
            let e = item.map_err(|e| {
                let at = e
                    .path()
                    .and_then(|p| p.strip_prefix(&src.root).ok())
                    .map(|r| show_path(&src.prefix.join(r)))
                    .unwrap_or_default();
                ArchiveError::failed(format!("cannot read `{at}`"), e)
            })?;
            let path = e.path();
            if skip.iter().any(|s| path == s) || spec.skip.iter().any(|s| path.starts_with(s)) {
                if e.file_type().is_dir() {
                    walk.skip_current_dir();
                    skipped_out_dir = true;
                }
                continue;
            }
            let rel = path.strip_prefix(&src.root).unwrap_or(Path::new(""));
            let name = src.prefix.join(rel);
            if name.as_os_str().is_empty() || !seen.insert(name.clone()) {
                continue;
            }
            // The roots are resolved and links are not followed: names are real paths.
            if spec
                .judge
                .is_some_and(|j| j.check_real(path, crate::model::Level::Read).is_err())
            {
                out.withheld += 1;
                if e.file_type().is_dir() {
                    walk.skip_current_dir();
                }
                continue;
            }
            if spec.excludes.is_some_and(|x| x.matches(&name)) {
                out.excluded += 1;
                if e.file_type().is_dir() {
                    walk.skip_current_dir();
                }
                continue;
            }
            add(&mut sink, &mut out, path, &name, spec.compression, stop)?;
        }
    }
    match sink {
        Sink::Tar(b) => {
            let enc = b
                .into_inner()
                .map_err(|e| ArchiveError::failed("cannot finish the tar", e))?;
            let mut f = enc
                .finish()
                .map_err(|e| ArchiveError::failed("cannot finish the compressed stream", e))?;
            f.flush()?;
        }
        Sink::Zip(z) => {
            z.finish()
                .map_err(|e| ArchiveError::failed("cannot finish the zip", e))?;
        }
    }
    out.compressed_size = fs::metadata(tmp.path()).map(|m| m.len()).unwrap_or(0);
    let persisted = if spec.overwrite {
        tmp.persist(&spec.archive).map(|_| ())
    } else {
        tmp.persist_noclobber(&spec.archive).map(|_| ())
    };
    persisted.map_err(|e| {
        if e.error.kind() == io::ErrorKind::AlreadyExists {
            ArchiveError::Params(
                "the archive appeared while it was being written (set `overwrite: true` to replace it)"
                    .to_owned(),
            )
        } else {
            ArchiveError::failed("cannot move the archive into place", e.error)
        }
    })?;
    warn(&mut out, skipped_out_dir);
    Ok(out)
}

/// What was left out, as warnings.
fn warn(out: &mut Created, skipped_out_dir: bool) {
    if skipped_out_dir {
        out.warnings
            .push("plangate's output directory was left out".to_owned());
    }
    if out.withheld > 0 {
        out.warnings.push(format!(
            "{} path(s) withheld: the permission rules deny reading them",
            out.withheld
        ));
    }
    if out.excluded > 0 {
        out.warnings.push(format!(
            "{} path(s) left out by exclude_patterns",
            out.excluded
        ));
    }
}

/// Add one walked path.
fn add(
    sink: &mut Sink,
    out: &mut Created,
    path: &Path,
    name: &Path,
    compression: Compression,
    stop: &Stop,
) -> Result<(), ArchiveError> {
    let shown_name = show_path(name);
    let meta = fs::symlink_metadata(path)
        .map_err(|e| ArchiveError::failed(format!("cannot read `{shown_name}`"), e))?;
    let ft = meta.file_type();
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let mode = meta.permissions().mode() & 0o777;
    let zip_name = || {
        name.to_str().map(str::to_owned).ok_or_else(|| {
            ArchiveError::Params(format!(
                "`{shown_name}` is not valid UTF-8: zip names must be; use a tar"
            ))
        })
    };
    let method = if compression == Compression::None {
        zip::CompressionMethod::Stored
    } else {
        zip::CompressionMethod::Deflated
    };
    let zip_opts = |m: u32| {
        zip::write::SimpleFileOptions::default()
            .compression_method(method)
            .unix_permissions(m)
            .last_modified_time(zip_time(i64::try_from(mtime).unwrap_or(0)))
    };
    if ft.is_dir() {
        out.directories += 1;
        match sink {
            Sink::Tar(b) => {
                let mut h = tar_header(tar::EntryType::Directory, 0o755, mtime, 0);
                b.append_data(&mut h, name, io::empty())
                    .map_err(|e| ArchiveError::failed(format!("cannot add `{shown_name}`"), e))?;
            }
            Sink::Zip(z) => {
                z.add_directory(format!("{}/", zip_name()?), zip_opts(0o755))
                    .map_err(|e| ArchiveError::failed(format!("cannot add `{shown_name}`"), e))?;
            }
        }
    } else if ft.is_symlink() {
        let target = fs::read_link(path).map_err(|e| {
            ArchiveError::failed(format!("cannot read the symlink `{shown_name}`"), e)
        })?;
        let t = target.as_os_str().as_bytes();
        if lexical_target(name.parent().unwrap_or(Path::new("")), t).is_none() {
            out.warnings.push(format!(
                "symlink `{shown_name}` → `{}` points outside the archive: plangate's extract will refuse it",
                shown(t)
            ));
        }
        match sink {
            Sink::Tar(b) => {
                let mut h = tar_header(tar::EntryType::Symlink, 0o777, mtime, 0);
                b.append_link(&mut h, name, &target)
                    .map_err(|e| ArchiveError::failed(format!("cannot add `{shown_name}`"), e))?;
            }
            Sink::Zip(z) => {
                let t = target.to_str().ok_or_else(|| {
                    ArchiveError::Params(format!(
                        "the target of `{shown_name}` is not valid UTF-8: use a tar"
                    ))
                })?;
                z.add_symlink(zip_name()?, t, zip_opts(0o777))
                    .map_err(|e| ArchiveError::failed(format!("cannot add `{shown_name}`"), e))?;
            }
        }
        out.files.push(shown_name);
    } else if ft.is_file() {
        let opts = zip_opts(mode).large_file(meta.len() >= 0xFFFF_FFFF);
        let file = RegularFile {
            path,
            name,
            len: meta.len(),
            mode,
            mtime,
        };
        add_file(sink, out, &file, &zip_name, opts, stop)?;
    } else {
        let what = if meta.rdev() != 0 {
            "a device"
        } else {
            "a fifo or socket"
        };
        out.warnings
            .push(format!("`{shown_name}` left out: it is {what}"));
    }
    Ok(())
}

/// A regular file to pack.
struct RegularFile<'a> {
    path: &'a Path,
    name: &'a Path,
    len: u64,
    mode: u32,
    mtime: u64,
}

/// Pack a regular file: exactly the length it had when it was listed
/// (padded if it shrank), the stop signal polled while copying.
fn add_file(
    sink: &mut Sink,
    out: &mut Created,
    file: &RegularFile<'_>,
    zip_name: &dyn Fn() -> Result<String, ArchiveError>,
    opts: zip::write::SimpleFileOptions,
    stop: &Stop,
) -> Result<(), ArchiveError> {
    let (path, name, len, mode, mtime) = (file.path, file.name, file.len, file.mode, file.mtime);
    let shown_name = show_path(name);
    let f = crate::regular::open(path)
        .map_err(|e| ArchiveError::failed(format!("cannot read `{shown_name}`"), e))?;
    let mut data = Exact {
        inner: f.take(len),
        left: len,
        shrank: false,
        stop,
    };
    let fail = |e: &dyn std::fmt::Display| {
        if stop.now() {
            ArchiveError::Limit(
                "stopped before the archive was finished (timeout or run stopped)".to_owned(),
            )
        } else {
            ArchiveError::Failed {
                what: format!("cannot add `{shown_name}`"),
                source: e.to_string().into(),
            }
        }
    };
    match sink {
        Sink::Tar(b) => {
            let mut h = tar_header(tar::EntryType::Regular, mode, mtime, len);
            b.append_data(&mut h, name, &mut data)
                .map_err(|e| fail(&e))?;
        }
        Sink::Zip(z) => {
            z.start_file(zip_name()?, opts).map_err(|e| fail(&e))?;
            io::copy(&mut data, z.as_mut()).map_err(|e| fail(&e))?;
        }
    }
    if data.shrank {
        out.warnings.push(format!(
            "`{shown_name}` shrank while it was packed: padded with zeros to its first size"
        ));
    }
    out.total_size += len;
    out.files.push(shown_name);
    Ok(())
}

fn tar_header(kind: tar::EntryType, mode: u32, mtime: u64, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_mtime(mtime);
    h.set_size(size);
    h.set_uid(0);
    h.set_gid(0);
    h
}

#[cfg(test)]
mod tests {
    use super::zip_time;

    #[test]
    fn zip_times_are_utc_calendar_dates() {
        let t = zip_time(1_700_000_000); // 2023-11-14 22:13:20 UTC
        assert_eq!(
            (
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
            (2023, 11, 14, 22, 13, 20)
        );
        let t = zip_time(951_782_400); // 2000-02-29 00:00:00
        assert_eq!((t.year(), t.month(), t.day()), (2000, 2, 29));
        assert_eq!(zip_time(0), zip::DateTime::default());
    }
}
