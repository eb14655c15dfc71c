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
    #[error(
        "{first} and {second} name one file ({path}): one would replace the other; give each its own path"
    )]
    Twice {
        path: String,
        first: String,
        second: String,
    },
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

/// Makes `dir`, a directory baton lays out below the user's output directory `root`
/// (`phases/01-A`, `sets/00-x`), with no symbolic link at any depth below `root`: a link
/// planted at `OUT/phases` would otherwise carry every phase's files into its target. `root`
/// itself is the user's path ([`ensure_dir`]); each component below it is created one at a time
/// or, where it exists, must be a directory and not a link.
pub fn ensure_dir_within(root: &Path, dir: &Path) -> Result<(), OutputError> {
    ensure_dir(root)?;
    let mut at = root.to_path_buf();
    for c in below(root, dir) {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(OutputError::Symlink {
                    path: at.display().to_string(),
                });
            }
            Ok(m) if !m.is_dir() => {
                return Err(OutputError::NotDir {
                    path: at.display().to_string(),
                });
            }
            Ok(_) => {}
            Err(_) => match std::fs::create_dir(&at) {
                Ok(()) => {}
                // Made by another process since: judged again as it now is.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return ensure_dir_within(root, dir);
                }
                Err(e) => return Err(OutputError::io(&at)(e)),
            },
        }
    }
    Ok(())
}

/// Refuses `path` (below the user's output directory `root`) when a symbolic link stands at
/// any component of it below `root` that exists: what baton reads back from its own output
/// directory (a phase's record) is never reached through a link either.
pub fn refuse_links_within(root: &Path, path: &Path) -> Result<(), OutputError> {
    let mut at = root.to_path_buf();
    for c in below(root, path) {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(OutputError::Symlink {
                    path: at.display().to_string(),
                });
            }
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// The components of `path` below `root` (all of a relative `path` that is not under it).
fn below<'a>(root: &Path, path: &'a Path) -> Vec<std::path::Component<'a>> {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect()
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

/// Refuses two of a command's outputs on one file (`--csv X --junit X`): each is named by
/// its flag. One file is the same path once made absolute, or the same file where both exist
/// (a hard link, a link above it); the null device takes any number.
pub fn refuse_twice(outputs: &[(&str, &Path)]) -> Result<(), OutputError> {
    let same = |a: &Path, b: &Path| {
        let abs = |p: &Path| std::path::absolute(p).map(|p| lexical(&p)).ok();
        if abs(a).is_some_and(|x| Some(x) == abs(b)) {
            return true;
        }
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    };
    for (i, (first, a)) in outputs.iter().enumerate() {
        if target(a).is_ok_and(|t| t == Target::Null) {
            continue;
        }
        if let Some((second, _)) = outputs[i + 1..].iter().find(|(_, b)| same(a, b)) {
            return Err(OutputError::Twice {
                path: a.display().to_string(),
                first: first.to_string(),
                second: second.to_string(),
            });
        }
    }
    Ok(())
}

/// `path` with `.` dropped and `..` taking off the component before it, without the file
/// system (links are not resolved: the caller decides what a link means). Plan-relative files
/// (`plan::files`) use it too.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
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
    fn no_directory_below_the_output_root_is_reached_through_a_link() {
        let d = scratch("within");
        let out = d.join("out");
        let victim = d.join("victim");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::create_dir_all(&victim).unwrap();
        std::os::unix::fs::symlink(&victim, out.join("phases")).unwrap();
        let e = ensure_dir_within(&out, &out.join("phases/01-A")).unwrap_err();
        assert!(matches!(e, OutputError::Symlink { .. }), "{e}");
        assert!(e.is_invalid_path());
        assert!(refuse_links_within(&out, &out.join("phases/01-A/phase.json")).is_err());
        assert_eq!(
            std::fs::read_dir(&victim).unwrap().count(),
            0,
            "nothing made there"
        );
        ensure_dir_within(&out, &out.join("sets/00-x")).unwrap();
        assert!(out.join("sets/00-x").is_dir());
        refuse_links_within(&out, &out.join("sets/00-x/absent/f")).unwrap();
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
    fn two_outputs_on_one_file_are_refused_naming_both() {
        let d = scratch("twice");
        let x = d.join("x");
        let e = refuse_twice(&[("--csv", &x), ("--junit", &d.join("./sub/../x"))]).unwrap_err();
        assert!(matches!(e, OutputError::Twice { .. }), "{e}");
        assert!(e.is_invalid_path());
        assert!(e.to_string().contains("--csv and --junit"), "{e}");
        std::fs::write(&x, "").unwrap();
        std::fs::hard_link(&x, d.join("y")).unwrap();
        assert!(refuse_twice(&[("--csv", &x), ("--metrics", &d.join("y"))]).is_err());
        refuse_twice(&[("--csv", &x), ("--junit", &d.join("z"))]).unwrap();
        let null = Path::new("/dev/null");
        if std::fs::metadata(null).is_ok() {
            refuse_twice(&[("--csv", null), ("--junit", null)]).unwrap();
        }
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
