//! This machine's name, as every record of a run gives it (results, transport captures, the
//! rendezvous, the output directory's lock). Below all of them, so none reaches into the worker.

/// This machine's host name (nccl-tests prints it up to the first dot).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "localhost".into())
}

/// Who runs this process, for a report someone signs: the login the shell gives, else the
/// account the user id has in the password database (a cron job or container often sets
/// neither `USER` nor `LOGNAME`), else the bare id — never blank.
pub fn user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        .or_else(account_name)
        .unwrap_or_else(|| format!("uid {}", unsafe { libc::getuid() }))
}

fn account_name() -> Option<String> {
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: every pointer is to a live local of the size given; getpwuid_r writes the
    // strings into `buf` only.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            &mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() || pw.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name points into `buf`, NUL-terminated by getpwuid_r.
    let name = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) };
    Some(name.to_string_lossy().into_owned()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_user_is_named_without_a_login_environment() {
        // The account of this test's user id, as the password database has it.
        let name = super::account_name().unwrap_or_default();
        assert!(!name.is_empty(), "getpwuid_r found no account for this uid");
    }
}
