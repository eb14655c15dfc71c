//! Node sets: which nodes run together. Cluster acceptance runs a test on every node alone, on
//! pairs of nodes, or adaptively to isolate a fault; results then name nodes, not rank indices.
//!
//! Data flows one way: a node list ([`hostlist`]) → rounds of disjoint node sets ([`schedule`],
//! [`isolate`] round by round, or a rerun's [`confirm`] pairs) → per-set outcomes → per-node
//! verdicts ([`attribution`], settled by node evidence where timings cannot: [`evidence`]) → `nodes.json` and `drain.sh` ([`export`]). Everything here is pure: it runs nothing, so the
//! runner, `check`/`expand` and the tests share it.

pub mod attribution;
pub mod confirm;
pub mod evidence;
pub mod export;
pub mod fleet;
pub mod hostlist;
pub mod isolate;
pub mod schedule;
pub mod straggler;

pub use attribution::{Attribution, Fault, Outlier, SetOutcome, SetResult, Verdict, attribute};
pub use hostlist::{HostlistError, compress, expand, parse_hostfile};
pub use isolate::Isolator;
pub use schedule::{Over, Pairing, Round, rounds};
