//! GPU state around each job (clocks, temperature, power, throttle reasons), so a slow run can
//! be told from a hot or capped one. Read through `nvidia-smi`, when present.

use std::process::Command;

use crate::results::TelemetrySample;

/// `clocks_event_reasons.active` bits, as nvidia-smi documents them.
const REASONS: &[(u64, &str)] = &[
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clocks_setting"),
];

pub fn reasons(mask: u64) -> Vec<String> {
    REASONS
        .iter()
        .filter(|(b, _)| mask & b != 0)
        .map(|(_, n)| n.to_string())
        .collect()
}

/// Parses `nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw,
/// clocks_event_reasons.active --format=csv,noheader,nounits` output.
pub fn parse(text: &str, when: &str, host: &str) -> Vec<TelemetrySample> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            if f.len() < 6 {
                return None;
            }
            let mask = u64::from_str_radix(f[5].trim_start_matches("0x"), 16).unwrap_or(0);
            Some(TelemetrySample {
                when: when.to_string(),
                host: host.to_string(),
                gpu: f[0].parse().ok()?,
                sm_clock_mhz: f[1].parse().ok(),
                mem_clock_mhz: f[2].parse().ok(),
                temperature_c: f[3].parse().ok(),
                power_w: f[4].parse().ok(),
                throttle_reasons: reasons(mask),
            })
        })
        .collect()
}

/// Samples every local GPU; empty when nvidia-smi is absent or fails.
pub fn sample(when: &str) -> Vec<TelemetrySample> {
    let out = Command::new("nvidia-smi")
        .args([
            "--query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active",
            "--format=csv,noheader,nounits",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => parse(
            &String::from_utf8_lossy(&o.stdout),
            when,
            &crate::host::hostname(),
        ),
        _ => Vec::new(),
    }
}

/// `nvidia-smi topo -m`, for the environment section of the report.
pub fn topology() -> Option<String> {
    let o = Command::new("nvidia-smi")
        .args(["topo", "-m"])
        .output()
        .ok()?;
    o.status.success().then(|| {
        // Strip the terminal underline codes nvidia-smi prints around the header.
        String::from_utf8_lossy(&o.stdout)
            .replace("\u{1b}[4m", "")
            .replace("\u{1b}[0m", "")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nvidia_smi_csv() {
        let s = parse(
            "0, 1980, 3201, 41, 690.12, 0x0000000000000000\n1, 345, 3201, 37, 83.58, 0x0000000000000044\n",
            "before",
            "vm",
        );
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].sm_clock_mhz, Some(1980));
        assert!(s[0].throttle_reasons.is_empty());
        assert_eq!(
            s[1].throttle_reasons,
            vec!["sw_power_cap", "hw_thermal_slowdown"]
        );
        assert_eq!(s[1].power_w, Some(83.58));
        assert!(parse("garbage\n", "after", "vm").is_empty());
    }
}
