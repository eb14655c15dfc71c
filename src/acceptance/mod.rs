//! An acceptance: phases A–E (or any) as one run that gates and excludes. The acceptance file
//! (`doc`, `raw`: `acceptance: 1`, its phases, their needs, suspects policy, stop rules and
//! criteria between phases) is checked like a plan; `run` drives its phases in order through
//! the runner every `baton run` uses, each in its own directory, resumable; `outcome` and
//! `combined` make the one set of outputs, `signable` the report a customer signs. Above `session` (it opens, runs and grades each
//! phase through it), below the CLI (which prints what it is told). See docs/acceptance.md.

mod combined;
mod criteria;
mod doc;
mod gate;
mod identity;
mod outcome;
mod phase;
mod raw;
mod record;
mod run;
mod script;
mod signable;
mod verdicts;

pub use combined::{summary, write_all};
pub use criteria::phase_busbw;
pub use doc::{
    Acceptance, Criterion, DEFAULT_RELATIVE, DEFAULT_STEADY, Finding, Phase, PhasePlan, Stop,
    is_acceptance, is_acceptance_file, load, parse, plan_findings,
};
pub use gate::{Gate, gate, stops};
pub use outcome::{AcceptanceFile, Overall, RanBy, outcome, outcome_schema};
pub use phase::{PhaseError, open as open_phase, phase_plan};
pub use raw::{Suspects, acceptance_schema};
pub use record::{NodeInPhase, NodeVerdict, PhaseRecord, PhaseStatus};
pub use run::{AcceptError, Outcome, Request, Told, phase_dir, run};
pub use script::{ScriptInput, slurm_script};
pub use signable::{Context, view, write_report};

#[cfg(test)]
mod tests;
