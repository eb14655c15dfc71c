//! Which figure of a profile a measurement is graded against, given the NCCL release and CTA
//! policy it was measured with. A row keyed to another NCCL (or policy) is still used when it
//! is the only one for that collective and size, but never silently: the choice carries a note
//! that the criterion's message and the report print.

use super::measured::Measured;
use super::{Figure, Profile};
use crate::collective::Collective;

/// The figure chosen for one measurement, and what does not match when it was made for another
/// NCCL or CTA policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Row<'p> {
    pub figure: &'p Figure,
    /// `profile h200-sxm-2 row for NCCL >=2.28, <2.29; measured with 2.30.7`.
    pub note: Option<String>,
}

impl Profile {
    /// The figure for collective `c` at `size` that best fits `m`: one whose NCCL range holds
    /// the measured release and whose CTA policy is the measured one; else one that matches on
    /// either; else any, the last written (profiles list rows oldest NCCL first).
    pub fn row(&self, c: Collective, size: u64, m: &Measured) -> Option<Row<'_>> {
        let figure = self
            .figures
            .iter()
            .filter(|f| f.collective == c && f.at.matches(size))
            .max_by_key(|f| fit(f, m))?;
        let note = mismatch(&self.name, figure, m);
        Some(Row { figure, note })
    }
}

/// How well a row fits (NCCL fits, policy fits); a row with no `nccl` fits every release, one
/// with no `cta_policy` was measured with NCCL's default.
fn fit(f: &Figure, m: &Measured) -> (bool, bool) {
    let nccl = match (&f.nccl, m.version()) {
        (None, _) => true,
        (Some(r), Some(v)) => r.contains(v),
        (Some(_), None) => false,
    };
    (nccl, f.cta_policy.unwrap_or(0) == m.policy())
}

fn mismatch(profile: &str, f: &Figure, m: &Measured) -> Option<String> {
    let (nccl, policy) = fit(f, m);
    let mut row = Vec::new();
    let mut now = Vec::new();
    if !nccl && let Some(r) = &f.nccl {
        row.push(format!("NCCL {r}"));
        now.push(match &m.nccl_version {
            Some(v) => v.clone(),
            None => "an NCCL the results do not record".into(),
        });
    }
    if !policy {
        row.push(format!("CTA policy {}", f.cta_policy.unwrap_or(0)));
        now.push(format!("CTA policy {}", m.policy()));
    }
    (!row.is_empty()).then(|| {
        format!(
            "profile {profile} row for {}; measured with {}",
            row.join(", "),
            now.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::parse;

    const TEXT: &str = "name: p\nversion: 1\ndescription: d\nfigures:
  - { collective: all_reduce, at: '>= 1G', busbw: 800, nccl: '<2.28', source: s }
  - { collective: all_reduce, at: '>= 1G', busbw: 700, nccl: '>=2.28, <2.29', source: s }
  - { collective: all_reduce, at: '>= 1G', busbw: 820, nccl: '>=2.28, <2.29', cta_policy: 1, source: s }
  - { collective: all_gather, at: '>= 1G', busbw: 300, source: s }
";

    fn with(v: Option<&str>, p: Option<u32>) -> Measured {
        Measured {
            nccl_version: v.map(str::to_string),
            cta_policy: p,
        }
    }

    fn busbw_and_note(m: &Measured, c: Collective) -> (f64, Option<String>) {
        let p = parse("p.yaml", TEXT).unwrap();
        let r = p.row(c, 4 << 30, m).unwrap();
        (r.figure.busbw, r.note)
    }

    #[test]
    fn the_row_for_the_measured_nccl_and_policy_is_picked_without_a_note() {
        let ar = Collective::AllReduce;
        assert_eq!(
            busbw_and_note(&with(Some("2.27.7"), None), ar),
            (800.0, None)
        );
        assert_eq!(
            busbw_and_note(&with(Some("2.28.3"), None), ar),
            (700.0, None)
        );
        assert_eq!(
            busbw_and_note(&with(Some("2.28.3"), Some(1)), ar),
            (820.0, None)
        );
        // A row keyed to no NCCL holds for every release.
        let ag = Collective::AllGather;
        assert_eq!(
            busbw_and_note(&with(Some("2.30.7"), None), ag),
            (300.0, None)
        );
    }

    #[test]
    fn a_row_for_another_nccl_or_policy_says_so() {
        let ar = Collective::AllReduce;
        let (bw, note) = busbw_and_note(&with(Some("2.30.7"), None), ar);
        assert_eq!(bw, 700.0);
        assert_eq!(
            note.as_deref(),
            Some("profile p row for NCCL >=2.28, <2.29; measured with 2.30.7")
        );
        let (_, note) = busbw_and_note(&with(Some("2.27.7"), Some(2)), ar);
        assert_eq!(
            note.as_deref(),
            Some("profile p row for CTA policy 0; measured with CTA policy 2")
        );
        let (_, note) = busbw_and_note(&with(None, None), ar);
        assert!(
            note.unwrap()
                .ends_with("measured with an NCCL the results do not record")
        );
    }
}
