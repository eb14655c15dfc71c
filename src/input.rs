//! Reading an input file (plan, log, results, baseline) that may come from anyone: only regular
//! files, and never more than a limit, counted in bytes actually read. File metadata is not
//! trusted for the bound (`/proc` files report 0 bytes, a file may grow while it is read), and
//! FIFOs, devices and sockets are refused without blocking: `/dev/zero` would never end and a
//! FIFO with no writer would hang.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why an input file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {what} {path}: it is {kind}, not a regular file")]
    NotAFile {
        what: &'static str,
        path: String,
        kind: &'static str,
    },
    #[error("{what} {path} is {}; {what}s are limited to {}", size_text(*.size), limit_text(*.limit))]
    TooBig {
        what: &'static str,
        path: String,
        /// Bytes known: the larger of what was read (at most `limit + 1`) and the reported size.
        size: u64,
        limit: usize,
    },
}

impl ReadError {
    /// Why, without the input's name: for callers whose own error names the file already.
    pub fn into_io(self) -> std::io::Error {
        match self {
            ReadError::Io { source, .. } => source,
            ReadError::NotAFile { kind, .. } => {
                std::io::Error::other(format!("it is {kind}, not a regular file"))
            }
            ReadError::TooBig {
                what, size, limit, ..
            } => std::io::Error::other(format!(
                "{}; {what}s are limited to {}",
                size_text(size),
                limit_text(limit)
            )),
        }
    }
}

fn size_text(size: u64) -> String {
    format!("at least {size} bytes")
}

fn limit_text(limit: usize) -> String {
    if limit >= 1 << 20 && limit.is_multiple_of(1 << 20) {
        format!("{} MiB", limit >> 20)
    } else {
        format!("{limit} bytes")
    }
}

/// The bytes of the regular file at `path`, at most `limit` of them; `what` names the input in
/// messages (`plan`, `log`, `results file`).
pub fn read_bounded(path: &Path, limit: usize, what: &'static str) -> Result<Vec<u8>, ReadError> {
    let name = path.display().to_string();
    let file = open_regular(path, what)?;
    let io = |source| ReadError::Io {
        what,
        path: name.clone(),
        source,
    };
    let meta = file.metadata().map_err(io)?;
    let too_big = |size: u64| ReadError::TooBig {
        what,
        path: name.clone(),
        size,
        limit,
    };
    if meta.len() > limit as u64 {
        return Err(too_big(meta.len()));
    }
    let bytes = read_limited(file, limit).map_err(io)?;
    match bytes {
        Ok(b) => Ok(b),
        Err(read) => Err(too_big(read.max(meta.len()))),
    }
}

/// The regular file at `path`, opened for reading; anything else (a FIFO, a device, a socket, a
/// directory) is refused before a byte is read. For readers that stream with bounds of their own.
pub fn open_regular(path: &Path, what: &'static str) -> Result<File, ReadError> {
    let name = path.display().to_string();
    let io = |source| ReadError::Io {
        what,
        path: name.clone(),
        source,
    };
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. The file
    // type is checked on the opened descriptor, so a path swapped after a check cannot slip by.
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    match not_regular(meta.file_type()) {
        Some(kind) => Err(ReadError::NotAFile {
            what,
            path: name,
            kind,
        }),
        None => Ok(file),
    }
}

/// The last `bytes` of the regular file at `path`, as text (invalid UTF-8 replaced); empty when
/// it cannot be read. For logs whose end is what matters (a launcher's refusal, NCCL's last
/// lines), however long they grew.
pub fn read_tail(path: &Path, bytes: u64, what: &'static str) -> String {
    use std::io::{Seek, SeekFrom};
    let read = || -> Result<Vec<u8>, ReadError> {
        let mut f = open_regular(path, what)?;
        let io = |e: std::io::Error| ReadError::Io {
            what,
            path: path.display().to_string(),
            source: e,
        };
        let len = f.metadata().map_err(io)?.len();
        f.seek(SeekFrom::Start(len.saturating_sub(bytes)))
            .map_err(io)?;
        let mut tail = Vec::new();
        f.take(bytes).read_to_end(&mut tail).map_err(io)?;
        Ok(tail)
    };
    read().map_or_else(
        |_| String::new(),
        |t| String::from_utf8_lossy(&t).into_owned(),
    )
}

/// What a file of type `t` is, for a message, when it is not a regular file.
pub fn not_regular(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_symlink() {
        Some("a symbolic link")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

/// Up to `limit` bytes of `r`: `Ok(Err(n))` when there are more (`n` bytes read by then).
pub fn read_limited(r: impl Read, limit: usize) -> std::io::Result<Result<Vec<u8>, u64>> {
    let mut buf = Vec::new();
    r.take(limit as u64 + 1).read_to_end(&mut buf)?;
    if buf.len() > limit {
        Ok(Err(buf.len() as u64))
    } else {
        Ok(Ok(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_is_the_files_end_and_nothing_from_what_is_not_a_file() {
        let d = std::env::temp_dir().join(format!("baton-tail-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let log = d.join("step.log");
        std::fs::write(&log, "first line\nlast line\n").unwrap();
        assert_eq!(read_tail(&log, 10, "log"), "last line\n");
        assert_eq!(read_tail(&log, 1 << 20, "log"), "first line\nlast line\n");
        assert_eq!(read_tail(&d.join("absent"), 10, "log"), "");
        // A FIFO with no writer: refused at once, never waited on.
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(read_tail(&fifo, 10, "log"), "");
        assert_eq!(read_tail(&d, 10, "log"), "", "a directory");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_bound_counts_bytes_read_not_the_reported_size() {
        // An endless reader, as /dev/zero or a file that grows: stops one byte past the limit.
        let r = read_limited(std::io::repeat(b'x'), 1000).unwrap();
        assert_eq!(r, Err(1001));
        let r = read_limited(&b"abc"[..], 3).unwrap();
        assert_eq!(r, Ok(b"abc".to_vec()));
    }

    #[test]
    fn devices_and_directories_are_refused() {
        let e = read_bounded(Path::new("/dev/zero"), 10, "plan").unwrap_err();
        assert!(matches!(e, ReadError::NotAFile { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "cannot read plan /dev/zero: it is a character device, not a regular file"
        );
        let e = read_bounded(Path::new("/"), 10, "log").unwrap_err();
        assert!(e.to_string().contains("it is a directory"), "{e}");
    }

    #[test]
    fn proc_files_that_report_zero_bytes_are_still_bounded() {
        let e = read_bounded(Path::new("/proc/self/maps"), 16, "log").unwrap_err();
        assert!(matches!(e, ReadError::TooBig { size: 17, .. }), "{e:?}");
        assert!(e.to_string().contains("limited to 16 bytes"), "{e}");
    }
}
