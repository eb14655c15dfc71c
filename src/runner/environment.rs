//! What a handover report must name about where numbers were measured.

use crate::results::{Environment, Host};

/// Environment of this process: the variables [`crate::secrets`] records, secrets redacted, and
/// the given hosts.
pub fn capture(hosts: &[String]) -> Environment {
    // Lossy: a variable that is not UTF-8 is recorded as best it can be, not a panic.
    let variables = crate::secrets::record(std::env::vars_os().map(|(k, v)| {
        (
            k.to_string_lossy().into_owned(),
            v.to_string_lossy().into_owned(),
        )
    }));
    let mut names: Vec<&String> = hosts.iter().collect();
    names.sort();
    names.dedup();
    Environment {
        hosts: names
            .into_iter()
            .map(|h| Host {
                hostname: h.clone(),
                gpus: Vec::new(),
            })
            .collect(),
        variables,
        ..Environment::default()
    }
}
