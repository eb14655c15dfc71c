//! Alltoallv's traffic: how many bytes each rank sends each peer, as nccl-tests' alltoallv_perf
//! decides it — a generated distance-weighted pattern (`NCCL_TESTS_ALLTOALLV_SPREAD`) or a
//! matrix file (`NCCL_TESTS_ALLTOALLV_MATRIX_FILE`, scaled by `_MATRIX_SCALE`). Every per-peer
//! figure is rounded down to 16 bytes, as there, so counts and sizes match its rows.

/// The environment variables nccl-tests reads, by the same names.
pub const MATRIX_FILE_VAR: &str = "NCCL_TESTS_ALLTOALLV_MATRIX_FILE";
pub const SPREAD_VAR: &str = "NCCL_TESTS_ALLTOALLV_SPREAD";
pub const MATRIX_SCALE_VAR: &str = "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE";

#[derive(Debug, Clone, PartialEq)]
pub enum Traffic {
    /// A blend of uniform (0) and distance-weighted (1) shares of each size: every rank sends
    /// and receives the same total, more of it to peers further away in rank order.
    Generated { spread: f64 },
    /// `bytes[i * dim + j]`: what rank `i` sends rank `j`, already scaled and rounded; the
    /// requested size does not change it.
    Matrix { dim: u64, bytes: Vec<u64> },
}

impl Default for Traffic {
    /// nccl-tests' default: generated at spread 1.
    fn default() -> Self {
        Traffic::Generated { spread: 1.0 }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrafficError {
    #[error("{var}={value:?} is not a number")]
    NotANumber { var: &'static str, value: String },
    #[error("{SPREAD_VAR}={0} is outside 0..=1")]
    SpreadRange(f64),
    #[error("{MATRIX_SCALE_VAR}={0} is negative")]
    NegativeScale(f64),
    #[error("traffic matrix row {row} column {col}: {text:?} is not a non-negative number")]
    BadValue {
        row: usize,
        col: usize,
        text: String,
    },
    #[error("traffic matrix row {row} has {got} columns, the first row {expected}")]
    Ragged {
        row: usize,
        expected: usize,
        got: usize,
    },
    #[error("traffic matrix is empty")]
    Empty,
    #[error("traffic matrix must be square (got {rows}x{cols})")]
    NotSquare { rows: usize, cols: usize },
    #[error("traffic matrix is {dim}x{dim}, smaller than the {n} ranks measured")]
    TooSmall { dim: u64, n: u64 },
}

fn number(var: &'static str, value: &str) -> Result<f64, TrafficError> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| TrafficError::NotANumber {
            var,
            value: value.to_string(),
        })
}

/// 16-byte rounding of one per-peer figure (nccl-tests aligns every peer's share so).
fn align(bytes: f64) -> u64 {
    (bytes as u64) & !15
}

impl Traffic {
    /// From the variables' values (`None`: unset) and, when the matrix variable is set, the
    /// matrix file's text. Values nccl-tests would silently ignore or clamp are refused here.
    pub fn from_vars(
        spread: Option<&str>,
        scale: Option<&str>,
        matrix: Option<&str>,
    ) -> Result<Traffic, TrafficError> {
        if let Some(text) = matrix {
            let scale = scale.map_or(Ok(1.0), |v| number(MATRIX_SCALE_VAR, v))?;
            if scale < 0.0 {
                return Err(TrafficError::NegativeScale(scale));
            }
            return Traffic::parse_matrix(text, scale);
        }
        let spread = spread.map_or(Ok(1.0), |v| number(SPREAD_VAR, v))?;
        if !(0.0..=1.0).contains(&spread) {
            return Err(TrafficError::SpreadRange(spread));
        }
        Ok(Traffic::Generated { spread })
    }

    /// Whitespace-separated byte counts, one matrix row per line, square.
    pub fn parse_matrix(text: &str, scale: f64) -> Result<Traffic, TrafficError> {
        let mut bytes = Vec::new();
        let mut cols = None;
        let rows: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        for (row, line) in rows.iter().enumerate() {
            let mut got = 0;
            for (col, word) in line.split_whitespace().enumerate() {
                let v = word
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0);
                let v = v.ok_or_else(|| TrafficError::BadValue {
                    row,
                    col,
                    text: word.to_string(),
                })?;
                bytes.push(align(v * scale));
                got += 1;
            }
            let expected = *cols.get_or_insert(got);
            if got != expected {
                return Err(TrafficError::Ragged { row, expected, got });
            }
        }
        let cols = cols.ok_or(TrafficError::Empty)?;
        if cols != rows.len() {
            return Err(TrafficError::NotSquare {
                rows: rows.len(),
                cols,
            });
        }
        Ok(Traffic::Matrix {
            dim: cols as u64,
            bytes,
        })
    }

    /// Whether the requested size sets the traffic (the count column is then the per-peer
    /// chunk; with a matrix it is 0).
    pub fn generated(&self) -> bool {
        matches!(self, Traffic::Generated { .. })
    }

    /// Refuses a matrix with fewer rows than the group has ranks.
    pub fn fits(&self, n: u64) -> Result<(), TrafficError> {
        match self {
            Traffic::Matrix { dim, .. } if *dim < n => Err(TrafficError::TooSmall { dim: *dim, n }),
            _ => Ok(()),
        }
    }

    /// Bytes rank `i` sends rank `j` of `n` when each rank sends `total` bytes in all.
    pub fn peer_bytes(&self, i: u64, j: u64, n: u64, total: u64) -> u64 {
        match self {
            Traffic::Matrix { dim, bytes } => bytes[(i * dim + j) as usize],
            Traffic::Generated { .. } if n <= 1 => total & !15,
            Traffic::Generated { spread } => {
                let distance = (j + n - i) % n;
                let sum = (n * (n - 1) / 2) as f64;
                let uniform = total as f64 / n as f64;
                let weighted = distance as f64 * total as f64 / sum;
                align((1.0 - spread) * uniform + spread * weighted)
            }
        }
    }

    /// Elements rank `i` sends each peer, in peer order.
    pub fn send_counts(&self, i: u64, n: u64, total: u64, e: u64) -> Vec<u64> {
        (0..n)
            .map(|j| self.peer_bytes(i, j, n, total) / e)
            .collect()
    }

    /// Elements rank `i` receives from each peer, in peer order.
    pub fn recv_counts(&self, i: u64, n: u64, total: u64, e: u64) -> Vec<u64> {
        (0..n)
            .map(|j| self.peer_bytes(j, i, n, total) / e)
            .collect()
    }

    /// The most elements any rank sends and any rank receives: nccl-tests sizes every rank's
    /// buffers, and its size column, by them.
    pub fn max_counts(&self, total: u64, e: u64, n: u64) -> (u64, u64) {
        let sum = |v: Vec<u64>| v.iter().sum::<u64>();
        let ranks = if self.generated() { 1 } else { n };
        (0..ranks).fold((0, 0), |(s, r), i| {
            (
                s.max(sum(self.send_counts(i, n, total, e))),
                r.max(sum(self.recv_counts(i, n, total, e))),
            )
        })
    }
}

#[cfg(test)]
mod tests;
