//! The acceptance file as written: serde types with positions, from which the JSON Schema
//! (`schemas/acceptance.schema.json`) is generated, so the schema and the reader cannot differ.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::plan::loc::Loc;

/// An acceptance: phases run in order over one node list, each a plan, with the rules between
/// them (docs/acceptance.md).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "baton acceptance")]
pub struct RawAcceptance {
    /// The marker of an acceptance file and its version: `acceptance: 1`.
    pub acceptance: Loc<u32>,
    pub name: Loc<String>,
    #[serde(default)]
    pub description: Option<String>,
    pub phases: Loc<Vec<RawPhase>>,
}

/// One phase: a plan and what it needs of the phases before it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPhase {
    /// Letters, digits, `-` and `_`: it names the phase's directory (`phases/NN-NAME/`).
    pub name: Loc<String>,
    /// A plan file (relative to this file) or the plan itself, inline.
    pub plan: Loc<RawPlanRef>,
    /// The node-set mode of the plan's tests that do not say one: `each-node`, `pairs`,
    /// `isolate` or `all`.
    #[serde(default)]
    pub over: Option<Loc<String>>,
    /// The phases whose passed nodes this one runs on (default: the phase before it).
    #[serde(default)]
    pub needs: Option<Loc<Vec<Loc<String>>>>,
    /// Run this phase only when the named earlier phase failed (an isolation step).
    #[serde(default)]
    pub only_if_failed: Option<Loc<String>>,
    /// What later phases do with the nodes this one left suspect (default `exclude`).
    #[serde(default)]
    pub suspects: Option<Loc<Suspects>>,
    /// Stop the acceptance after this phase when too many nodes have failed.
    #[serde(default)]
    pub stop: Option<Loc<RawStop>>,
    /// Criteria comparing this phase with earlier ones.
    #[serde(default)]
    pub criteria: Vec<Loc<RawCriterion>>,
}

/// A plan file's path, or a plan written inline.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RawPlanRef {
    File(String),
    Inline(serde_json::Map<String, serde_json::Value>),
}

/// What later phases do with a suspect node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Suspects {
    /// Run the phase again over its suspects, each paired with nodes that passed; the rerun's
    /// verdicts count.
    Rerun,
    /// Leave them out of later phases.
    Exclude,
    /// Keep them in later phases.
    Include,
}

/// When to stop: more than this many (or this share of) the acceptance's nodes failed or dead.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStop {
    #[serde(default)]
    pub failed_nodes: Option<u32>,
    #[serde(default)]
    pub failed_percent: Option<f64>,
}

/// A criterion between phases, by name.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum RawCriterion {
    /// This phase's busbw against an earlier phase's, size by size.
    Relative(RawRelative),
    /// Every repeat of this phase within a share of its median (`<= 5%`).
    Steady(Option<String>),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRelative {
    /// The earlier phase compared with.
    pub to: String,
    /// This phase's collective (default: every collective the phase measured that `to` did).
    #[serde(default)]
    pub collective: Option<String>,
    /// The earlier phase's collective (default: the same as `collective`).
    #[serde(default)]
    pub of: Option<String>,
    /// The share of the earlier phase's busbw (default `>= 90%`).
    #[serde(default)]
    pub busbw: Option<String>,
}

/// The JSON Schema of an acceptance file (draft 2020-12).
pub fn acceptance_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(RawAcceptance)).expect("schema serializes")
}
