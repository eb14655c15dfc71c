//! nccl-tests' newer flags as plan settings (`register` -R, `cta_policy` -x, `device_api` -D,
//! `device_ctas` -V, `blocking` -z, `null_stream` -y, `parallel_init` -p, `cpu_time` -C,
//! `timestamps` -S, `memory` -M, `run_cycles` -N, `per_iter_skip` -K): parsed once into these
//! types, so the engine and the results read values, never plan text.

use serde::{Deserialize, Serialize};

use crate::collective::{Collective, Dtype};

/// How the send and receive buffers are registered with the communicator (nccl-tests `-R`);
/// written as the plan writes it, nccl-tests' number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "u8", try_from = "u8")]
pub enum Register {
    /// No registration (`-R 0`, nccl-tests' default).
    #[default]
    Off,
    /// `ncclCommRegister` of each buffer (`-R 1`).
    Local,
    /// `ncclCommWindowRegister` with `NCCL_WIN_COLL_SYMMETRIC` (`-R 2`, NCCL ≥ 2.27).
    Symmetric,
}

impl Register {
    /// The number nccl-tests takes and prints.
    pub fn code(self) -> u8 {
        match self {
            Register::Off => 0,
            Register::Local => 1,
            Register::Symmetric => 2,
        }
    }

    pub fn from_code(n: i64) -> Option<Register> {
        match n {
            0 => Some(Register::Off),
            1 => Some(Register::Local),
            2 => Some(Register::Symmetric),
            _ => None,
        }
    }

    pub fn is_off(&self) -> bool {
        *self == Register::Off
    }
}

/// When a sweep waits for each op (nccl-tests `-z`); written as nccl-tests' number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "u8", try_from = "u8")]
pub enum Blocking {
    /// Ops are enqueued back to back; one wait at the end (`-z 0`, the default).
    #[default]
    Off,
    /// Wait for each op, then a barrier among the ranks (`-z 1`).
    WaitBarrier,
    /// Wait for each op, no barrier (`-z 2`).
    Wait,
    /// Wait and barrier after each iteration, the barrier outside the clock (`-z 3`).
    Iteration,
}

impl Blocking {
    pub fn code(self) -> u8 {
        match self {
            Blocking::Off => 0,
            Blocking::WaitBarrier => 1,
            Blocking::Wait => 2,
            Blocking::Iteration => 3,
        }
    }

    pub fn from_code(n: i64) -> Option<Blocking> {
        match n {
            0 => Some(Blocking::Off),
            1 => Some(Blocking::WaitBarrier),
            2 => Some(Blocking::Wait),
            3 => Some(Blocking::Iteration),
            _ => None,
        }
    }

    pub fn is_off(&self) -> bool {
        *self == Blocking::Off
    }
}

impl From<Register> for u8 {
    fn from(r: Register) -> u8 {
        r.code()
    }
}

impl TryFrom<u8> for Register {
    type Error = String;
    fn try_from(n: u8) -> Result<Self, String> {
        Register::from_code(n.into()).ok_or_else(|| format!("register mode {n} (0, 1 or 2)"))
    }
}

impl From<Blocking> for u8 {
    fn from(b: Blocking) -> u8 {
        b.code()
    }
}

impl TryFrom<u8> for Blocking {
    type Error = String;
    fn try_from(n: u8) -> Result<Self, String> {
        Blocking::from_code(n.into()).ok_or_else(|| format!("blocking mode {n} (0 to 3)"))
    }
}

/// The NCCL device API implementation a job asks for (nccl-tests `-D` and `-V`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeviceApi {
    /// nccl-tests' implementation number (> 0).
    pub implementation: u32,
    /// CTAs of the device kernel (`-V`, 1–128, nccl-tests' default 16).
    pub ctas: u32,
}

/// nccl-tests' default `-V`.
pub const DEFAULT_DEVICE_CTAS: u32 = 16;

/// What baton's device-API kernels (`kernels/device_api.cu`) cover: `check` refuses the rest
/// and the engine names one entry per pair; nccl-tests' device kernels have these types.
pub const DEVICE_API_COLLECTIVES: [Collective; 2] = [Collective::AllReduce, Collective::AllToAll];
pub const DEVICE_API_DTYPES: [Dtype; 9] = [
    Dtype::Int8,
    Dtype::Uint8,
    Dtype::Int32,
    Dtype::Uint32,
    Dtype::Int64,
    Dtype::Uint64,
    Dtype::Half,
    Dtype::Float,
    Dtype::Double,
];

/// The NCCL versions the settings need, as `ncclGetVersion` codes.
pub const NCCL_2_27: i32 = 22700;
pub const NCCL_2_28: i32 = 22800;

/// The settings that change how the NCCL engine measures, all off by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Knobs {
    #[serde(default, skip_serializing_if = "Register::is_off")]
    #[schemars(with = "u8", range(max = 2))]
    pub register: Register,
    /// `ncclConfig_t.CTAPolicy`: 0 default, 1 efficiency, 2 zero (copy-engine collectives);
    /// absent: left to NCCL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cta_policy: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_api: Option<DeviceApi>,
    #[serde(default, skip_serializing_if = "Blocking::is_off")]
    #[schemars(with = "u8", range(max = 3))]
    pub blocking: Blocking,
    /// Ops on the legacy default stream instead of a stream of their own (`-y 1`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub null_stream: bool,
    /// Leading iterations left out of the per-iteration statistics (`-K`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub per_iter_skip: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Knobs {
    pub fn is_default(&self) -> bool {
        *self == Knobs::default()
    }

    /// The oldest NCCL that can run these settings, with the setting that needs it.
    pub fn needs_nccl(&self) -> Option<(i32, &'static str)> {
        if self.device_api.is_some() {
            return Some((NCCL_2_28, "`device_api`"));
        }
        if self.cta_policy.is_some_and(|p| p >= 2) {
            return Some((NCCL_2_28, "`cta_policy: 2`"));
        }
        if self.register == Register::Symmetric {
            return Some((NCCL_2_27, "`register: 2`"));
        }
        if self.cta_policy.is_some() {
            return Some((NCCL_2_27, "`cta_policy`"));
        }
        None
    }
}

/// What a sweep reports besides its rows (nccl-tests `-C`, `-S`, `-M`): they change what is
/// printed and recorded, not what is measured, so they stay out of the job identity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Reports {
    pub cpu_time: bool,
    pub timestamps: bool,
    pub memory: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_need_is_named() {
        let k = Knobs {
            register: Register::Symmetric,
            cta_policy: Some(2),
            ..Knobs::default()
        };
        assert_eq!(k.needs_nccl(), Some((NCCL_2_28, "`cta_policy: 2`")));
        let k = Knobs {
            register: Register::Symmetric,
            ..Knobs::default()
        };
        assert_eq!(k.needs_nccl(), Some((NCCL_2_27, "`register: 2`")));
        assert_eq!(Knobs::default().needs_nccl(), None);
    }

    #[test]
    fn codes_round_trip() {
        for n in 0..3 {
            assert_eq!(Register::from_code(n).map(|r| r.code() as i64), Some(n));
        }
        for n in 0..4 {
            assert_eq!(Blocking::from_code(n).map(|b| b.code() as i64), Some(n));
        }
        assert_eq!(Register::from_code(3), None);
        assert_eq!(Blocking::from_code(4), None);
    }

    #[test]
    fn results_write_the_plans_numbers() {
        let k = Knobs {
            register: Register::Symmetric,
            blocking: Blocking::Iteration,
            ..Knobs::default()
        };
        let text = serde_json::to_string(&k).unwrap();
        assert_eq!(text, r#"{"register":2,"blocking":3}"#);
        assert_eq!(serde_json::from_str::<Knobs>(&text).unwrap(), k);
        assert!(serde_json::from_str::<Knobs>(r#"{"register":5}"#).is_err());
        assert_eq!(serde_json::to_string(&Knobs::default()).unwrap(), "{}");
    }
}
