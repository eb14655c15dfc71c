//! The plan language: what users keep in git. Loading goes file → located YAML tree → structural
//! pass against the JSON Schema → typed raw plan → semantic checks → [`Plan`].

mod check;
mod diag;
pub mod files;
mod hints;
pub mod jobs;
pub mod knobs;
mod load;
pub mod loc;
mod model;
mod partial;
mod raw;
pub mod revision;
pub mod straggler;
mod structure;
pub mod transport_rule;
mod trust;

pub use check::{MAX_JOBS, MAX_RANKS, MAX_SIZES_PER_TEST};
pub use diag::{Diagnostic, Level, MAX_SHOWN, Report};
pub use files::{PlanFileError, PlanFiles};
pub(crate) use load::options as yaml_options;
pub use load::{
    LoadError, Loaded, MAX_PLAN_BYTES, Vouched, load_file, load_file_with, parse_bytes,
    parse_bytes_with, parse_str, parse_str_vouched, parse_str_with, parse_tree, read_file,
};
pub use loc::{Loc, Node, Pos, Scalar};
pub use model::*;
pub use raw::plan_schema;
pub use structure::{check as check_structure, suggest as suggest_name};
pub use trust::Trust;
