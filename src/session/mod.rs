//! The use cases of a run and of `grade`, above the stages they combine (runner, grade, report)
//! and below the CLI: a plan opened once, the nodes a run drives node sets over, the baseline
//! and history resolved against it, the one
//! grading path — the verdict that steers `over: isolate` is the verdict the report gives — and
//! every file a run or `grade` writes besides results. Nothing here prints: each use case
//! returns values and typed errors, and the CLI says them and maps them to exit codes.

mod against;
mod early;
mod fleet;
mod grading;
mod inputs;
mod nodes;
mod opened;
mod outputs;
mod rerun;

pub use against::{Against, AgainstError, OpenedHistory, baseline_for, history_for};
pub use early::{EarlyJunit, JunitError, plan_problems, run_junit, write_failed_junit};
pub use fleet::{failed_run_id, notify, notify_tls, run_id, write_metrics};
pub use grading::{Grading, run_exit};
pub use inputs::{
    Folded, ReadResults, UnusableResults, fold_journals, outputs_clear, read_results,
    unusable_input,
};
pub use nodes::{NodeRequest, NodesError, for_run as nodes_for_run, selected_tests};
pub use opened::{OpenError, OpenedPlan, open, open_bytes, open_with, plan_files};
pub use outputs::{
    NodesWritten, verdict_json, verdict_text, write_csv, write_junit, write_nodes, write_report,
};
pub use rerun::{RerunError, RerunList, rerun_of};
