//! What a log says about the nccl-tests flags that change a number, so an ingested job's
//! `measured_with` says what it was measured with, as `baton run` records it.
//!
//! nccl-tests 2.19's text output reveals `-z` (a `# Blocking Enabled` line per mode), `-M` (the
//! `# GPU memory usage` footer line) and, through the warnings its argument parser prints, a
//! `-R` that the loaded NCCL demoted; `-R` and `-x` themselves print nothing. Its JSON output
//! (`-J`) keeps the whole command line in `args`, so there every flag is known, and nccl-tests'
//! own fall-backs for an older NCCL are applied to it here.

use crate::results::{MeasuredWith, MemoryFigures};

/// The flags one log revealed; `None`: the log does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Flags {
    pub register: Option<u8>,
    /// The `-x` in effect; `None` also when nccl-tests ignored it (as it did for the run).
    pub cta_policy: Option<u8>,
    pub blocking: Option<u8>,
    pub memory: Option<MemoryFigures>,
}

impl Flags {
    /// The record of a job ingested from this log, with the NCCL its header printed.
    pub fn measured_with(&self, nccl_version: Option<String>) -> Option<MeasuredWith> {
        let m = MeasuredWith {
            nccl_version,
            register: self.register,
            cta_policy: self.cta_policy,
            blocking: self.blocking,
            memory: self.memory,
            // baton's own kernels and the headers they were built with: a log's `-D` ran
            // nccl-tests' kernels, which that record cannot describe.
            device_api: None,
        };
        (m != MeasuredWith::default()).then_some(m)
    }
}

/// The `-z` mode a `Blocking Enabled: …` header line (without `#`) names.
pub fn blocking_line(c: &str) -> Option<u8> {
    let what = c.strip_prefix("Blocking Enabled:")?;
    Some(if what.contains("outer iteration") {
        3
    } else if what.contains("no barrier") {
        2
    } else {
        1
    })
}

/// The registration a plain argument-parser warning leaves in effect: `-R 2` demoted to local
/// before NCCL 2.27, any `-R` ignored before 2.19.
pub fn register_warning(t: &str) -> Option<u8> {
    if t.starts_with("Option -R 2 (symmetric) is not supported") {
        return Some(1);
    }
    t.starts_with("Option -R (register) is not supported")
        .then_some(0)
}

/// `Initialization 1.02 GB | User-Allocated 512 MB | Collective 6.00 MB | Total  1.51 GB`, the
/// rest of `-M`'s `GPU memory usage :` line, in bytes (as exact as its three digits allow).
pub fn memory_line(rest: &str) -> Option<MemoryFigures> {
    let rest = rest.trim_start_matches([' ', ':']);
    let mut figures = [None; 3];
    for part in rest.split('|') {
        let toks: Vec<&str> = part.split_whitespace().collect();
        let [name, amount, unit] = toks[..] else {
            continue;
        };
        let slot = match name {
            "Initialization" => 0,
            "User-Allocated" => 1,
            "Collective" => 2,
            _ => continue,
        };
        figures[slot] = Some(bytes(amount, unit)?);
    }
    Some(MemoryFigures {
        init_bytes: figures[0]?,
        user_bytes: figures[1]?,
        collective_bytes: figures[2]?,
    })
}

/// nccl-tests' `getMemString` units are binary (`GB` = 2^30).
fn bytes(amount: &str, unit: &str) -> Option<u64> {
    let v: f64 = amount.parse().ok()?;
    let scale = match unit {
        "B" => 1.0,
        "KB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    (v.is_finite() && v >= 0.0).then(|| (v * scale).round() as u64)
}

/// The flags of a JSON log's `args`, with nccl-tests' own handling for the loaded NCCL
/// (`nccl`, an `ncclGetVersion` code): `-R` ignored before 2.19 and `-R 2` demoted to 1 before
/// 2.27; `-x` ignored before 2.27 and `-x 2` before 2.28. An absent flag is nccl-tests' default.
pub fn from_args(args: &[&str], nccl: Option<u64>) -> Flags {
    let at_least = |code: u64| nccl.is_none_or(|v| v >= code);
    let register = match value(args, 'R', "local_register").unwrap_or(0) {
        _ if !at_least(21900) => 0,
        2 if !at_least(22700) => 1,
        r => r.clamp(0, 2) as u8,
    };
    let cta_policy = value(args, 'x', "cta_policy")
        .filter(|p| (0..=2).contains(p))
        .filter(|_| at_least(22700))
        .filter(|p| *p < 2 || at_least(22800))
        .map(|p| p as u8);
    let blocking = value(args, 'z', "blocking").unwrap_or(0).clamp(0, 3) as u8;
    Flags {
        register: Some(register),
        cta_policy,
        blocking: Some(blocking),
        memory: None,
    }
}

/// The last value given to `-c` / `--long`, in getopt's spellings (`-R 2`, `-R2`,
/// `--local_register 2`, `--local_register=2`), read like `strtol(…, 0)`.
fn value(args: &[&str], short: char, long: &str) -> Option<i64> {
    let short = format!("-{short}");
    let long = format!("--{long}");
    let mut found = None;
    let mut i = 1;
    while i < args.len() {
        let a = args[i];
        let v = if a == short || a == long {
            i += 1;
            args.get(i).copied()
        } else if let Some(v) = a.strip_prefix(&format!("{long}=")) {
            Some(v)
        } else if a.starts_with(&short) && !a.starts_with("--") {
            a.get(2..)
        } else {
            None
        };
        if let Some(v) = v {
            found = strtol(v).or(found);
        }
        i += 1;
    }
    found
}

fn strtol(v: &str) -> Option<i64> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// nccl-tests 2.19.6's header lines for -z 1, 2 and 3 (util.cu `writeDeviceReport`).
    #[test]
    fn each_blocking_line_names_its_mode() {
        let lines = [
            (
                "Blocking Enabled: wait and barrier after each inner iteration (-m) ",
                1,
            ),
            (
                "Blocking Enabled: wait after each inner iteration (-m), no barrier ",
                2,
            ),
            (
                "Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier ",
                3,
            ),
        ];
        for (l, mode) in lines {
            assert_eq!(blocking_line(l), Some(mode), "{l}");
        }
        assert_eq!(
            blocking_line("Per-Iteration Report: CUDA event timing"),
            None
        );
    }

    #[test]
    fn memory_figures_are_read_in_binary_units() {
        let m = memory_line(
            " : Initialization 1.02 GB | User-Allocated 512 MB | Collective 6.00 MB | Total  1.51 GB",
        )
        .unwrap();
        assert_eq!(m.init_bytes, (1.02 * (1u64 << 30) as f64).round() as u64);
        assert_eq!(m.user_bytes, 512 << 20);
        assert_eq!(m.collective_bytes, 6 << 20);
        assert_eq!(memory_line(": Initialization 1 GB | Total 1 GB"), None);
        assert_eq!(
            memory_line(": Initialization x GB | User-Allocated 1 B | Collective 1 B"),
            None
        );
    }

    #[test]
    fn args_in_every_getopt_spelling_and_nccl_tests_fallbacks() {
        let args = [
            "./all_reduce_perf",
            "-R",
            "2",
            "-x1",
            "--blocking=3",
            "-g",
            "2",
        ];
        let f = from_args(&args, Some(22807));
        assert_eq!(
            (f.register, f.cta_policy, f.blocking),
            (Some(2), Some(1), Some(3))
        );
        let f = from_args(
            &["p", "--local_register", "2", "--cta_policy", "2"],
            Some(22703),
        );
        assert_eq!(
            (f.register, f.cta_policy),
            (Some(2), None),
            "-x 2 needs 2.28"
        );
        let f = from_args(&["p", "-R", "2", "-x", "1"], Some(22603));
        assert_eq!(
            (f.register, f.cta_policy),
            (Some(1), None),
            "2.26: -R 2 → 1, no -x"
        );
        let f = from_args(&["p", "-R", "1"], Some(21805));
        assert_eq!(f.register, Some(0), "-R ignored before 2.19");
        let f = from_args(&["p", "-b", "8"], Some(22803));
        assert_eq!(
            (f.register, f.cta_policy, f.blocking),
            (Some(0), None, Some(0))
        );
    }

    #[test]
    fn demoted_registration_warnings() {
        assert_eq!(
            register_warning(
                "Option -R 2 (symmetric) is not supported before NCCL 2.27. Defaulting to local registration"
            ),
            Some(1)
        );
        assert_eq!(
            register_warning("Option -R (register) is not supported before NCCL 2.19. Ignoring"),
            Some(0)
        );
        assert_eq!(register_warning("NCCL version 2.28.3"), None);
    }
}
