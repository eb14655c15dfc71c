//! What a job was measured with, as far as picking a profile row needs it: the NCCL release and
//! the CTA policy. One function reads it from results ([`measured`]).

use super::nccl_range::NcclVersion;
use crate::results::{Environment, JobResult};

/// The variable NCCL reads its communicator CTA policy from (NCCL >= 2.27).
const CTA_POLICY_VAR: &str = "NCCL_CTA_POLICY";

/// The NCCL and CTA policy a job's numbers come from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// As recorded, `2.30.7`; `None` when the results do not say.
    pub nccl_version: Option<String>,
    /// `None`: NCCL's default policy (nothing set).
    pub cta_policy: Option<u32>,
}

impl Measured {
    pub fn version(&self) -> Option<NcclVersion> {
        self.nccl_version.as_deref().and_then(NcclVersion::parse)
    }

    /// The policy in effect: NCCL's default (0) when none was set.
    pub fn policy(&self) -> u32 {
        self.cta_policy.unwrap_or(0)
    }
}

/// What `job` was measured with: its own record (`measured_with`: the library it loaded, the
/// policy its communicators were made with) where results have one; else, for results from
/// before that record or an ingested log, the run's NCCL version and the CTA policy the job's
/// variables (else the run's) set.
pub fn measured(env: Option<&Environment>, job: &JobResult) -> Measured {
    let with = job.measured_with.as_ref();
    let var = job
        .env
        .get(CTA_POLICY_VAR)
        .or_else(|| env.and_then(|e| e.variables.get(CTA_POLICY_VAR)));
    Measured {
        nccl_version: with
            .and_then(|w| w.nccl_version.clone())
            .or_else(|| env.and_then(|e| e.nccl_version.clone())),
        cta_policy: with
            .and_then(|w| w.cta_policy.map(u32::from))
            .or_else(|| var.and_then(|v| cta_policy(v))),
    }
}

/// `1`, `EFFICIENCY`, `zero`: NCCL's policy flags by number or name.
fn cta_policy(v: &str) -> Option<u32> {
    let v = v.trim();
    v.parse().ok().or(match v.to_ascii_uppercase().as_str() {
        "DEFAULT" => Some(0),
        "EFFICIENCY" => Some(1),
        "ZERO" => Some(2),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_is_read_by_number_or_name_and_defaults_to_zero() {
        assert_eq!(cta_policy("2"), Some(2));
        assert_eq!(cta_policy("efficiency"), Some(1));
        assert_eq!(cta_policy("fast"), None);
        assert_eq!(Measured::default().policy(), 0);
    }
}
