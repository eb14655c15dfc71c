//! Which recorded variables a report shows, and as whose. results.json keeps everything it
//! recorded; reports show a variable on the job it came from, leave out what baton set for its
//! own capture (it is not the user's setting) and container noise that says nothing about a
//! collective (NVIDIA_REQUIRE_CUDA, NV_*, *_VERSION).

use indexmap::IndexMap;

use super::{Environment, JobResult};

/// Variables baton sets on its own runs to capture NCCL's connection lines.
pub const CAPTURE: &[&str] = &["NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"];

/// Start of the capture files' names (see `runner::transport`).
const CAPTURE_FILE: &str = "nccl-debug.";

/// Container and driver-stack variables that never shape a collective.
pub fn is_noise(name: &str) -> bool {
    name.starts_with("NVIDIA_REQUIRE_")
        || matches!(
            name,
            "NVIDIA_DRIVER_CAPABILITIES" | "NVIDIA_PRODUCT_NAME" | "NVARCH"
        )
        || name.starts_with("NV_")
        || name.ends_with("_VERSION")
}

/// The variables of `vars` that baton itself set for capture: `NCCL_DEBUG_FILE` naming one of
/// its capture files, and then the `NCCL_DEBUG=INFO` / `NCCL_DEBUG_SUBSYS=INIT` it adds beside
/// it. A user's own NCCL_DEBUG (any other level, or without baton's file) stays theirs.
fn captured(vars: &IndexMap<String, String>) -> Vec<&'static str> {
    let ours = vars.get("NCCL_DEBUG_FILE").is_some_and(|f| {
        std::path::Path::new(f)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(CAPTURE_FILE))
    });
    if !ours {
        return Vec::new();
    }
    let mut v = vec!["NCCL_DEBUG_FILE"];
    if vars.get("NCCL_DEBUG_SUBSYS").map(String::as_str) == Some("INIT") {
        v.push("NCCL_DEBUG_SUBSYS");
        if vars.get("NCCL_DEBUG").map(String::as_str) == Some("INFO") {
            v.push("NCCL_DEBUG");
        }
    }
    v
}

fn shown(vars: &IndexMap<String, String>) -> Vec<(String, String)> {
    let ours = captured(vars);
    vars.iter()
        .filter(|(k, _)| !is_noise(k) && !ours.contains(&k.as_str()))
        .map(|(k, v)| {
            // `NET,INIT`: the user asked for NET, baton added INIT.
            let v = match (k.as_str(), ours.is_empty()) {
                ("NCCL_DEBUG_SUBSYS", false) => v.strip_suffix(",INIT").unwrap_or(v),
                _ => v.as_str(),
            };
            (k.clone(), v.to_string())
        })
        .collect()
}

/// The variables a report shows on one job: its own (plan, matrix, or what its log states).
pub fn shown_vars(job: &JobResult) -> Vec<(String, String)> {
    shown(&job.env)
}

/// The variables a report shows for the whole run.
pub fn shown_run_vars(env: &Environment) -> Vec<(String, String)> {
    shown(&env.variables)
}

/// The variables every one of `sets` states with the same value: what may be called run-wide
/// when several logs or results files make one report.
pub fn common<'a>(
    mut sets: impl Iterator<Item = &'a IndexMap<String, String>>,
) -> IndexMap<String, String> {
    let Some(first) = sets.next() else {
        return IndexMap::new();
    };
    let mut out = first.clone();
    for s in sets {
        out.retain(|k, v| s.get(k) == Some(v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> IndexMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn capture_and_container_noise_are_not_shown_as_the_users() {
        let env = Environment {
            variables: vars(&[
                ("NCCL_DEBUG", "INFO"),
                ("NCCL_DEBUG_SUBSYS", "INIT"),
                ("NCCL_DEBUG_FILE", "/out/parts/nccl-debug.set0.%h.%p.log"),
                ("NCCL_IB_HCA", "mlx5_0"),
                ("NVIDIA_REQUIRE_CUDA", "cuda>=12.4 brand=tesla"),
                ("NV_LIBNCCL_PACKAGE_VERSION", "2.21.5-1"),
                ("CUDA_VERSION", "12.4.1"),
            ]),
            ..Environment::default()
        };
        assert_eq!(
            shown_run_vars(&env),
            [("NCCL_IB_HCA".to_string(), "mlx5_0".to_string())]
        );
        // The user's own debug settings stay theirs; baton's INIT is taken off.
        let user = vars(&[
            ("NCCL_DEBUG", "INFO"),
            ("NCCL_DEBUG_SUBSYS", "NET,INIT"),
            ("NCCL_DEBUG_FILE", "/out/parts/nccl-debug.set1.%h.%p.log"),
        ]);
        assert_eq!(
            shown(&user),
            [
                ("NCCL_DEBUG".to_string(), "INFO".to_string()),
                ("NCCL_DEBUG_SUBSYS".to_string(), "NET".to_string())
            ]
        );
        let own_file = vars(&[("NCCL_DEBUG", "INFO"), ("NCCL_DEBUG_FILE", "/var/log/n.%p")]);
        assert_eq!(shown(&own_file).len(), 2);
    }

    #[test]
    fn only_what_every_source_states_is_run_wide() {
        let a = vars(&[("NCCL_P2P_DISABLE", "1"), ("NCCL_NVLS_ENABLE", "0")]);
        let b = vars(&[("NCCL_NVLS_ENABLE", "0")]);
        assert_eq!(
            common([&a, &b].into_iter()),
            vars(&[("NCCL_NVLS_ENABLE", "0")])
        );
    }
}
