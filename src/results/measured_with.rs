//! What a job was measured with: the loaded NCCL and the engine flags that change a number
//! (registration, CTA policy, blocking), and GPU memory as nccl-tests `-M` reports it. A busbw
//! without them cannot be compared across an NCCL upgrade (2.28 halved Blackwell's CTAs).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MeasuredWith {
    /// The loaded library's version (`ncclGetVersion`), e.g. `2.30.7`; for an ingested log the
    /// version its header prints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<String>,
    /// Buffer registration, as nccl-tests `-R`: 0 none, 1 local, 2 symmetric windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register: Option<u8>,
    /// `ncclConfig_t.CTAPolicy` the communicators were made with; absent: NCCL's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cta_policy: Option<u8>,
    /// nccl-tests `-z` mode: 0 ops back to back, 1–3 a wait after each op (see the plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<u8>,
    /// GPU memory per rank, the largest of any rank (`memory: true`, nccl-tests `-M`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryFigures>,
    /// The NCCL device API implementation that moved the data (`device_api`, nccl-tests `-D`);
    /// absent: NCCL's own collective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_api: Option<DeviceImplementation>,
}

/// Which device-API kernels ran: baton's own restatement of nccl-tests' implementation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceImplementation {
    /// nccl-tests' `-D` number.
    pub implementation: u32,
    /// CTAs per launch (`-V`).
    pub ctas: u32,
    /// The NCCL headers baton's kernels were built against, e.g. `2.30.7`.
    pub headers: String,
}

/// nccl-tests `-M`'s three figures, bytes, each the maximum over ranks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryFigures {
    /// Taken by creating the communicators (`Initialization`).
    pub init_bytes: u64,
    /// Taken by the send and receive buffers and their registration (`User-Allocated`).
    pub user_bytes: u64,
    /// Taken while the sweep ran (`Collective`).
    pub collective_bytes: u64,
}

impl MemoryFigures {
    /// The per-rank maximum of each figure.
    pub fn max(figures: impl IntoIterator<Item = MemoryFigures>) -> Option<MemoryFigures> {
        figures.into_iter().reduce(|a, b| MemoryFigures {
            init_bytes: a.init_bytes.max(b.init_bytes),
            user_bytes: a.user_bytes.max(b.user_bytes),
            collective_bytes: a.collective_bytes.max(b.collective_bytes),
        })
    }
}

impl MeasuredWith {
    /// `2.30.7 · register 2 · cta_policy 1 · blocking 0`, for a report line.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(v) = &self.nccl_version {
            parts.push(format!("NCCL {v}"));
        }
        if let Some(r) = self.register {
            parts.push(format!("register {r}"));
        }
        parts.push(match self.cta_policy {
            Some(p) => format!("cta_policy {p}"),
            None => "cta_policy default".into(),
        });
        if let Some(b) = self.blocking {
            parts.push(format!("blocking {b}"));
        }
        if let Some(d) = &self.device_api {
            parts.push(format!(
                "device_api {} ({} CTAs, baton's kernels, NCCL {} headers)",
                d.implementation, d.ctas, d.headers
            ));
        }
        if let Some(m) = self.memory {
            parts.push(format!(
                "memory init {} · user {} · collective {}",
                crate::units::human_bytes(m.init_bytes),
                crate::units::human_bytes(m.user_bytes),
                crate::units::human_bytes(m.collective_bytes)
            ));
        }
        parts.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_the_largest_rank_per_figure() {
        let a = MemoryFigures {
            init_bytes: 5,
            user_bytes: 1,
            collective_bytes: 7,
        };
        let b = MemoryFigures {
            init_bytes: 2,
            user_bytes: 9,
            collective_bytes: 3,
        };
        assert_eq!(
            MemoryFigures::max([a, b]),
            Some(MemoryFigures {
                init_bytes: 5,
                user_bytes: 9,
                collective_bytes: 7
            })
        );
    }

    #[test]
    fn absent_policy_reads_as_nccls_default() {
        let m = MeasuredWith {
            nccl_version: Some("2.30.7".into()),
            register: Some(2),
            ..MeasuredWith::default()
        };
        assert_eq!(m.summary(), "NCCL 2.30.7 · register 2 · cta_policy default");
    }

    #[test]
    fn a_device_implementation_is_named_with_its_headers() {
        let m = MeasuredWith {
            nccl_version: Some("2.30.7".into()),
            register: Some(2),
            device_api: Some(DeviceImplementation {
                implementation: 1,
                ctas: 16,
                headers: "2.30.7".into(),
            }),
            ..MeasuredWith::default()
        };
        assert_eq!(
            m.summary(),
            "NCCL 2.30.7 · register 2 · cta_policy default · device_api 1 (16 CTAs, baton's kernels, NCCL 2.30.7 headers)"
        );
        let text = serde_json::to_string(&m).unwrap();
        assert!(text.contains(r#""device_api":{"implementation":1,"ctas":16,"headers":"2.30.7"}"#));
        assert_eq!(serde_json::from_str::<MeasuredWith>(&text).unwrap(), m);
    }
}
