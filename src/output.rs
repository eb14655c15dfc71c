//! Every file baton writes goes through here, because its outputs land in directories that
//! strangers may have prepared (a CI workspace, a shared scratch directory, a vendor's tarball):
//! a write is atomic (a reader or a crash sees the old file or the new one whole), never follows a
//! symbolic link planted where an output goes, never replaces a file the same command reads, and
//! never replaces (or writes into) anything but a regular file: a FIFO, socket, directory or
//! device where an output goes is refused, except the null device, which discards as asked
//! (`--junit /dev/null`).

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(
        "{path}: is a symbolic link; baton never writes through one (give the real path, or remove the link)"
    )]
    Symlink { path: String },
    #[error("{path}: exists and is not a directory")]
    NotDir { path: String },
    #[error(
        "{path}: is {kind}; baton writes only regular files (or discards into /dev/null): remove it or choose another path"
    )]
    NotRegular { path: String, kind: &'static str },
    #[error("{path}: is also an input of this command ({input}); choose another output path")]
    Input { path: String, input: String },
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl OutputError {
    /// The path the user gave cannot be an output (exit 2); otherwise writing it failed (exit 3).
    pub fn is_invalid_path(&self) -> bool {
        !matches!(self, OutputError::Io { .. })
    }

    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
        move |source| OutputError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// Makes `dir` (and its parents) a directory baton may write into. The user's own path may pass
/// through links above it; the directory itself must not be one.
pub fn ensure_dir(dir: &Path) -> Result<(), OutputError> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => Err(OutputError::Symlink {
            path: dir.display().to_string(),
        }),
        Ok(m) if !m.is_dir() => Err(OutputError::NotDir {
            path: dir.display().to_string(),
        }),
        Ok(_) => Ok(()),
        Err(_) => std::fs::create_dir_all(dir).map_err(OutputError::io(dir)),
    }
}

/// Refuses `path` when a link sits where an output goes.
pub fn refuse_symlink(path: &Path) -> Result<(), OutputError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(OutputError::Symlink {
            path: path.display().to_string(),
        }),
        _ => Ok(()),
    }
}

/// Writes `bytes` to `path`: a fresh temporary file beside it (created exclusively, never through
/// a link), flushed to disk, then renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_atomic_with(path, bytes, 0o644)
}

fn write_atomic_with(path: &Path, bytes: &[u8], mode: u32) -> Result<(), OutputError> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let dir = parent(path);
    ensure_dir(&dir)?;
    if target(path)? == Target::Null {
        return Ok(());
    }
    let name = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.tmp.{}.{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(bytes)?;
        // Explicit, so the umask neither widens nor narrows what the caller asked for.
        f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(OutputError::io(path))
}

/// [`write_atomic`] with the file's mode set (`0o755` for scripts) before it appears.
pub fn write_atomic_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), OutputError> {
    write_atomic_with(path, bytes, mode)
}

/// Opens `path` for appending (created when missing), never through a link, and only a regular
/// file.
pub fn open_append(path: &Path) -> Result<std::fs::File, OutputError> {
    open_regular(path, std::fs::OpenOptions::new().append(true).create(true))
}

/// Opens `path` for reading and writing (created when missing, never truncated): a lock file.
pub fn open_read_write(path: &Path) -> Result<std::fs::File, OutputError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    open_regular(path, &mut opts)
}

/// Opens `path` with `opts`, never through a link, without blocking (a FIFO would wait for a
/// peer), and keeps it only when it is a regular file.
fn open_regular(
    path: &Path,
    opts: &mut std::fs::OpenOptions,
) -> Result<std::fs::File, OutputError> {
    ensure_dir(&parent(path))?;
    refuse_symlink(path)?;
    let file = opts
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match target(path) {
            Err(refused) => refused,
            Ok(_) => OutputError::io(path)(e),
        })?;
    let m = file.metadata().map_err(OutputError::io(path))?;
    if let Some(kind) = crate::input::not_regular(m.file_type()) {
        return Err(OutputError::NotRegular {
            path: path.display().to_string(),
            kind,
        });
    }
    Ok(file)
}

/// What sits where an output goes.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// Nothing, or a regular file: written by replacing it.
    File,
    /// The null device: nothing to write.
    Null,
}

/// Refuses what an output must never replace: a link, and anything but a regular file or the
/// null device. A device node can come from a tarball unpacked as root, a FIFO from anyone who
/// can write the directory; renaming over either changes the machine, writing into a disk or a
/// terminal is worse, and opening a FIFO waits for a reader for ever.
fn target(path: &Path) -> Result<Target, OutputError> {
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(_) => return Ok(Target::File),
    };
    if m.file_type().is_symlink() {
        return Err(OutputError::Symlink {
            path: path.display().to_string(),
        });
    }
    if is_null_device(&m) {
        return Ok(Target::Null);
    }
    match crate::input::not_regular(m.file_type()) {
        Some(kind) => Err(OutputError::NotRegular {
            path: path.display().to_string(),
            kind,
        }),
        None => Ok(Target::File),
    }
}

/// Linux's null device is character device 1:3, wherever its node lies.
fn is_null_device(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let rdev = m.rdev() as libc::dev_t;
    m.file_type().is_char_device() && libc::major(rdev) == 1 && libc::minor(rdev) == 3
}

/// Refuses, before the command does any work, an output that is the same file as one of the
/// command's inputs (`ingest log -o log`) or that no write may replace (see [`target`]).
pub fn refuse_inputs<'a>(
    out: &Path,
    inputs: impl IntoIterator<Item = &'a Path>,
) -> Result<(), OutputError> {
    if target(out)? == Target::Null {
        return Ok(());
    }
    let Ok(o) = std::fs::metadata(out) else {
        return Ok(());
    };
    for input in inputs {
        if let Ok(i) = std::fs::metadata(input)
            && i.dev() == o.dev()
            && i.ino() == o.ino()
        {
            return Err(OutputError::Input {
                path: out.display().to_string(),
                input: input.display().to_string(),
            });
        }
    }
    Ok(())
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("baton-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_planted_link_is_refused_and_its_target_untouched() {
        let d = scratch("link");
        let target = d.join("victim");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, d.join("junit.xml")).unwrap();
        let e = write_atomic(&d.join("junit.xml"), b"x").unwrap_err();
        assert!(matches!(e, OutputError::Symlink { .. }), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        std::os::unix::fs::symlink(&d, d.join("out")).unwrap();
        assert!(matches!(
            write_atomic(&d.join("out").join("f"), b"x"),
            Err(OutputError::Symlink { .. })
        ));
        assert!(open_append(&d.join("junit.xml")).is_err());
    }

    #[test]
    fn special_files_are_never_replaced_nor_opened_and_null_discards() {
        use std::os::unix::fs::FileTypeExt;
        let d = scratch("special");
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::fs::create_dir(d.join("dir")).unwrap();
        for p in [fifo.clone(), d.join("dir")] {
            for e in [
                write_atomic(&p, b"x").unwrap_err(),
                open_append(&p).unwrap_err(),
                open_read_write(&p).unwrap_err(),
                refuse_inputs(&p, []).unwrap_err(),
            ] {
                assert!(matches!(e, OutputError::NotRegular { .. }), "{e}");
                assert!(e.is_invalid_path());
            }
        }
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        let null = Path::new("/dev/null");
        if std::fs::metadata(null).is_ok_and(|m| m.file_type().is_char_device()) {
            write_atomic(null, b"discarded").unwrap();
            refuse_inputs(null, [Path::new("/dev/null")]).unwrap();
            assert!(
                std::fs::metadata(null)
                    .unwrap()
                    .file_type()
                    .is_char_device()
            );
        }
    }

    #[test]
    fn writes_replace_whole_and_leave_no_temporary() {
        let d = scratch("atomic");
        let p = d.join("sub").join("r.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = std::fs::read_dir(d.join("sub")).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn an_output_that_is_an_input_is_refused() {
        let d = scratch("input");
        let log = d.join("log.txt");
        std::fs::write(&log, "x").unwrap();
        std::fs::hard_link(&log, d.join("other")).unwrap();
        assert!(refuse_inputs(&log, [log.as_path()]).is_err());
        assert!(refuse_inputs(&d.join("other"), [log.as_path()]).is_err());
        assert!(refuse_inputs(&d.join("new"), [log.as_path()]).is_ok());
    }
}
