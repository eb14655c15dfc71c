//! Units that plans are written in. Sizes are binary, bandwidths decimal; each has its own parser
//! so one can never be read with the other's rules.

mod duration;
mod selector;
mod size;
mod threshold;
mod trend;

pub use duration::parse_duration;
pub use selector::{SizeSelector, parse_selector};
pub use size::{Size, human_bytes, parse_size};
pub use threshold::{Cmp, Quantity, Threshold, parse_threshold};
pub use trend::{DEFAULT_RUNS, MAX_RUNS, Trend, parse_trend};

/// A value that does not read as its unit; `expected` tells the user what would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UnitError {
    pub message: String,
    pub expected: String,
}

impl UnitError {
    pub fn new(message: impl Into<String>, expected: impl Into<String>) -> Self {
        UnitError {
            message: message.into(),
            expected: expected.into(),
        }
    }
}
