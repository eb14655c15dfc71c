//! Host memory for the MPI backend's buffers: page-aligned anonymous mappings advised for
//! transparent huge pages (what numpy does for large arrays), so multi-MiB copies are not slowed
//! by TLB misses on machines where THP is `madvise`-only.

/// A zero-filled host buffer, unmapped on drop.
pub struct HostBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; moving it between threads is fine.
unsafe impl Send for HostBuf {}

impl HostBuf {
    pub fn new(len: usize) -> std::io::Result<HostBuf> {
        let len = len.max(1);
        // SAFETY: a fresh private anonymous mapping; checked for failure below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // Advice only: kernels without THP ignore it, and a refusal changes nothing else.
        // SAFETY: the range was just mapped.
        unsafe {
            libc::madvise(ptr, len, libc::MADV_HUGEPAGE);
        }
        Ok(HostBuf {
            ptr: ptr.cast(),
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: ptr..ptr+len is mapped read-write for self's lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HostBuf {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what new() mapped.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn zeroed_and_writable() {
        let mut b = super::HostBuf::new(3 << 20).unwrap();
        assert_eq!(b.len(), 3 << 20);
        assert!(b.bytes().iter().all(|x| *x == 0));
        b.bytes()[(3 << 20) - 1] = 7;
        assert_eq!(b.bytes()[(3 << 20) - 1], 7);
    }
}
