//! baton: version-controlled acceptance plans for GPU clusters, expanded into jobs, measured with
//! the same semantics as nccl-tests, and graded.
//!
//! The pipeline runs one way: [`plan`] → [`expand`] → (run / ingest) → [`results`] → grade → report.

pub mod acceptance;
pub mod baseline;
pub mod child;
pub mod collective;
pub mod deadline;
pub mod digest;
pub mod exit;
pub mod expand;
pub mod grade;
pub mod history;
pub mod host;
pub mod ingest;
pub mod input;
pub mod launch;
pub mod metrics;
pub mod nodeset;
pub mod notify;
pub mod output;
pub mod plan;
pub mod probe;
pub mod profile;
pub mod ras;
pub mod render;
pub mod rendezvous;
pub mod report;
pub mod results;
pub mod runner;
pub mod secrets;
pub mod session;
pub mod shell;
pub mod site;
pub mod split;
pub mod stats;
pub mod stdout;
pub mod units;
pub mod world;
