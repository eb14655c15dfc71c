//! Hardware profiles: what a healthy system of a kind measures, per collective and size band,
//! each figure with its public source, so that `busbw: ">= 90% of profile"` asks "is this number
//! normal for this hardware?" without the user looking the number up.
//!
//! Profiles ship inside the binary (`profiles/*.yaml`, versioned with the code); a plan may
//! bring its own in a `profiles/` directory beside it, or name a file. A plan names one
//! (`profile: h200-sxm-8`) or lets grading pick one from the recorded GPUs (model × count).
//!
//! A plan's profile file is one of its plan-relative files ([`PlanFiles`]), and what goes wrong
//! with it reaches `check`'s output and the criterion message that JUnit, the report and the
//! verdict JSON publish. So a file that is not a profile is named by path and position only,
//! never quoted: a plan pointing `profile:` at a secret learns nothing from the error.

mod check;
mod measured;
mod nccl_range;
mod pick;
mod row;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::collective::Collective;
use crate::plan::{Loc, PlanFileError, PlanFiles};
use crate::units::{SizeSelector, parse_selector};

pub use check::{check_plan, floors_above};
pub use measured::{Measured, measured};
pub use nccl_range::{NcclRange, NcclVersion, RangeError};
pub use pick::{Picked, for_job, pick};
pub use row::Row;

/// Largest profile file read.
const MAX_PROFILE_BYTES: usize = 1 << 20;

/// The profiles built into baton.
const EMBEDDED: &[(&str, &str)] = &[
    ("a100-sxm-8", include_str!("../../profiles/a100-sxm-8.yaml")),
    ("b200-8", include_str!("../../profiles/b200-8.yaml")),
    (
        "gb200-nvl72",
        include_str!("../../profiles/gb200-nvl72.yaml"),
    ),
    ("h100-sxm-8", include_str!("../../profiles/h100-sxm-8.yaml")),
    ("h200-sxm-2", include_str!("../../profiles/h200-sxm-2.yaml")),
    ("h200-sxm-8", include_str!("../../profiles/h200-sxm-8.yaml")),
    ("hdr-200", include_str!("../../profiles/hdr-200.yaml")),
    ("ndr-400", include_str!("../../profiles/ndr-400.yaml")),
];

/// One profile file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: String,
    version: u32,
    description: String,
    /// Matched against recorded GPU names (case-insensitive substring).
    gpu: Option<String>,
    /// GPUs in one job of this kind.
    gpus: Option<u64>,
    nic: Option<String>,
    /// `rail` for NIC profiles: figures are what one rail carries.
    per: Option<String>,
    /// The NCCL releases every figure without its own `nccl` holds for.
    nccl: Option<Loc<String>>,
    /// The CTA policy of every figure without its own `cta_policy`.
    cta_policy: Option<u32>,
    figures: Vec<RawFigure>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFigure {
    collective: String,
    at: String,
    /// GB/s, decimal, as nccl-tests prints busbw.
    busbw: f64,
    source: String,
    /// The NCCL releases the figure holds for (`">=2.28, <2.29"`); omitted: any.
    nccl: Option<Loc<String>>,
    /// The CTA policy it was measured with (`NCCL_CTA_POLICY`); omitted: NCCL's default, 0.
    cta_policy: Option<u32>,
}

/// A checked profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    pub version: u32,
    pub description: String,
    pub gpu: Option<String>,
    pub gpus: Option<u64>,
    pub nic: Option<String>,
    pub figures: Vec<Figure>,
}

/// Expected busbw of one collective over a band of sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub collective: Collective,
    pub at: SizeSelector,
    /// The band as written, for messages.
    pub at_text: String,
    pub busbw: f64,
    pub source: String,
    /// `None`: the figure holds for any NCCL.
    pub nccl: Option<NcclRange>,
    /// `None`: measured with NCCL's default policy.
    pub cta_policy: Option<u32>,
}

impl Figure {
    /// `all_reduce >= 4G`, with the NCCL and CTA policy it is keyed by: `… [NCCL <2.28]`.
    pub fn label(&self) -> String {
        let mut keys = Vec::new();
        if let Some(r) = &self.nccl {
            keys.push(format!("NCCL {r}"));
        }
        if let Some(p) = self.cta_policy {
            keys.push(format!("CTA policy {p}"));
        }
        let mut s = format!("{} {}", self.collective, self.at_text);
        if !keys.is_empty() {
            s.push_str(&format!(" [{}]", keys.join(", ")));
        }
        s
    }
}

/// Why a profile cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "unknown profile `{name}`{hint} (built in: {known}; a plan may add its own in profiles/ beside it)"
    )]
    Unknown {
        name: String,
        hint: String,
        known: String,
    },
    #[error("{path}: {why}")]
    Read { path: String, why: String },
    #[error("{path}: not a profile: {why}")]
    Invalid { path: String, why: String },
    #[error("`{key}: {name}`: a profile file ends in .yaml")]
    NotYaml { key: &'static str, name: String },
    #[error(transparent)]
    Refused(#[from] PlanFileError),
}

/// The keys a profile has, for the message about one that does not parse (whose own text is
/// never shown).
const PROFILE_KEYS: &str = "name, version, description, gpu, gpus, nic, per, nccl, cta_policy, figures: [{ collective, at, busbw, source, nccl, cta_policy }]";

impl Profile {
    /// The figure for a collective at a size, if the profile has one.
    pub fn figure(&self, c: Collective, size: u64) -> Option<&Figure> {
        self.figures
            .iter()
            .find(|f| f.collective == c && f.at.matches(size))
    }

    /// `all_reduce >= 4G, all_gather >= 4G`: what it does have, for messages.
    pub fn bands(&self) -> String {
        self.figures
            .iter()
            .map(Figure::label)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether this profile describes `count` GPUs named `gpu_name`. The model is matched as a
    /// whole word of the name (`NVIDIA A100-SXM4-80GB` is an A100), so `B200` never takes a
    /// `GB200`.
    pub fn fits(&self, gpu_name: &str, count: u64) -> bool {
        let named = self.gpu.as_ref().is_some_and(|g| {
            gpu_name
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w.eq_ignore_ascii_case(g))
        });
        named && self.gpus == Some(count)
    }
}

/// Parses profile text; `path` names it in errors, which never quote the text.
pub fn parse(path: &str, text: &str) -> Result<Profile, ProfileError> {
    let invalid = |why: String| ProfileError::Invalid {
        path: path.to_string(),
        why,
    };
    let raw: RawProfile = serde_saphyr::from_str(text).map_err(|e| {
        let at = e.location().map_or_else(String::new, |l| {
            format!(" at line {}, column {}", l.line(), l.column())
        });
        invalid(format!(
            "the YAML{at} does not parse as one (its text is not shown; a profile has {PROFILE_KEYS})"
        ))
    })?;
    if raw.version != 1 {
        return Err(invalid(format!(
            "profile version {} (this baton reads 1)",
            raw.version
        )));
    }
    if raw.per.as_deref().is_some_and(|p| p != "rail") {
        return Err(invalid("`per` can only be `rail`".into()));
    }
    let all_nccl = range(raw.nccl.as_ref(), "").map_err(invalid)?;
    let mut figures = Vec::new();
    for (i, f) in raw.figures.into_iter().enumerate() {
        let n = i + 1;
        let collective: Collective = f.collective.parse().map_err(|_| {
            invalid(format!(
                "figure {n}: `collective` is not one baton knows (all_reduce, all_gather, …)"
            ))
        })?;
        let at = parse_selector(&f.at).map_err(|_| {
            invalid(format!(
                "figure {n}: `at` is not a size or band (`8G`, `>= 4G`, `1G..2G`)"
            ))
        })?;
        if !(f.busbw.is_finite() && f.busbw > 0.0) {
            return Err(invalid(format!(
                "figure {n}: busbw {} is not a bandwidth",
                f.busbw
            )));
        }
        if f.source.trim().is_empty() {
            return Err(invalid(format!(
                "the {} {} figure has no source",
                collective, f.at
            )));
        }
        let nccl = range(f.nccl.as_ref(), &format!("figure {n}: "))
            .map_err(invalid)?
            .or_else(|| all_nccl.clone());
        figures.push(Figure {
            collective,
            at,
            at_text: f.at,
            busbw: f.busbw,
            source: f.source,
            nccl,
            cta_policy: f.cta_policy.or(raw.cta_policy),
        });
    }
    Ok(Profile {
        name: raw.name,
        version: raw.version,
        description: raw.description,
        gpu: raw.gpu,
        gpus: raw.gpus,
        nic: raw.nic,
        figures,
    })
}

/// A `nccl:` range; `at` names its place (`figure 2: `) in the error, which never quotes it.
fn range(r: Option<&Loc<String>>, at: &str) -> Result<Option<NcclRange>, String> {
    let Some(r) = r else { return Ok(None) };
    NcclRange::parse(&r.value).map(Some).map_err(|e| {
        format!(
            "{at}`nccl` at line {}, column {} is not an NCCL version range: {e}",
            r.pos.line, r.pos.col
        )
    })
}

/// Every built-in profile.
pub fn embedded() -> Vec<Profile> {
    EMBEDDED
        .iter()
        .filter_map(|(n, t)| parse(&format!("profiles/{n}.yaml"), t).ok())
        .collect()
}

/// The profiles a plan sees: its own `profiles/*.yaml` first (each inside that directory, links
/// included, unless the plan is trusted), then the built-in ones it does not replace.
pub fn available(files: Option<&PlanFiles>) -> Result<Vec<Profile>, ProfileError> {
    let mut out = Vec::new();
    if let Some(files) = files
        && let Ok(entries) = std::fs::read_dir(files.dir().join("profiles"))
    {
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".yaml"))
            .collect();
        names.sort();
        for n in names {
            let real = checked(files, "profiles", &n, Path::new("profiles"))?;
            out.push(read(&real, &files.dir().join("profiles").join(&n))?);
        }
    }
    for e in embedded() {
        if !out.iter().any(|p: &Profile| p.name == e.name) {
            out.push(e);
        }
    }
    Ok(out)
}

/// The path to read for the profile file `name` the plan names at `key`: beside the plan
/// (under `sub`), or for a trusted plan anywhere but `/proc`, `/sys` and `/dev` — and outside
/// the plan's directory only a `.yaml` file, whatever the link pointing at it is called.
fn checked(
    files: &PlanFiles,
    key: &'static str,
    name: &str,
    sub: &Path,
) -> Result<PathBuf, ProfileError> {
    let real = files.resolve_in(key, name, sub)?;
    let yaml = real.extension().is_some_and(|x| x == "yaml");
    if !name.ends_with(".yaml") || (!yaml && !files.holds(&real)) {
        return Err(ProfileError::NotYaml {
            key,
            name: name.to_string(),
        });
    }
    Ok(real)
}

/// Reads the profile at `real`; `shown` names it in errors.
fn read(real: &Path, shown: &Path) -> Result<Profile, ProfileError> {
    let shown = shown.display().to_string();
    let bytes = crate::input::read_bounded(real, MAX_PROFILE_BYTES, "profile").map_err(|e| {
        ProfileError::Read {
            path: shown.clone(),
            why: e.to_string(),
        }
    })?;
    let text = String::from_utf8(bytes).map_err(|_| ProfileError::Invalid {
        path: shown.clone(),
        why: "not UTF-8 text".into(),
    })?;
    parse(&shown, &text)
}

/// The profile a plan names: a name (the plan's `profiles/NAME.yaml`, else built in) or a
/// `.yaml` file beside the plan. `None`: no plan, only the built-in profiles.
pub fn named(name: &str, files: Option<&PlanFiles>) -> Result<Profile, ProfileError> {
    if name.ends_with(".yaml") || name.contains('/') {
        let here = PlanFiles::in_dir(Path::new("."), crate::plan::Trust::Data);
        let files = files.unwrap_or(&here);
        let real = checked(files, "profile", name, Path::new(""))?;
        return read(&real, &files.dir().join(name));
    }
    let all = available(files)?;
    if let Some(p) = all.iter().find(|p| p.name == name) {
        return Ok(p.clone());
    }
    let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
    let hint = crate::plan::suggest_name(name, &names)
        .map(|s| format!(" — did you mean `{s}`?"))
        .unwrap_or_default();
    Err(ProfileError::Unknown {
        name: name.to_string(),
        hint,
        known: names.join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_profile_parses_and_every_figure_has_a_source() {
        for (n, t) in EMBEDDED {
            let p = parse(n, t).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&p.name, n);
            assert!(!p.figures.is_empty(), "{n}");
            for f in &p.figures {
                assert!(
                    f.source.starts_with("https://") || f.source.starts_with("tests/data/"),
                    "{n}: {}",
                    f.source
                );
            }
            // The comment above each figure says what the source says.
            let comments = t
                .lines()
                .filter(|l| l.trim_start().starts_with('#'))
                .count();
            assert!(comments >= p.figures.len().min(2), "{n}");
        }
    }

    #[test]
    fn a_file_that_is_not_a_profile_is_placed_never_quoted() {
        for (text, secret) in [
            ("root:$6$s3cr3t$x:19000:0:99999:7:::\n", "s3cr3t"),
            ("CI_JOB_TOKEN=glpat-s3cr3t\0SHELL=/bin/sh\0", "s3cr3t"),
            (
                "name: x\nversion: 1\ndescription: d\ns3cr3t_key: 1\nfigures: []\n",
                "s3cr3t",
            ),
            (
                "name: x\nversion: 1\ndescription: d\nfigures:\n  - { collective: s3cr3t, at: 8G, busbw: 1, source: s }\n",
                "s3cr3t",
            ),
            (
                "name: x\nversion: 1\ndescription: d\nfigures:\n  - { collective: all_reduce, at: s3cr3t, busbw: 1, source: s }\n",
                "s3cr3t",
            ),
        ] {
            let e = parse("p.yaml", text).unwrap_err().to_string();
            assert!(!e.contains(secret), "{e}");
            assert!(e.starts_with("p.yaml: not a profile: "), "{e}");
        }
        let e = parse("p.yaml", "a: 1\nb: [\n").unwrap_err().to_string();
        assert!(e.contains("at line "), "{e}");
    }

    #[test]
    fn a_profile_s_nccl_and_policy_hold_for_rows_without_their_own() {
        let text = "name: x\nversion: 1\ndescription: d\nnccl: '2.28'\ncta_policy: 1\nfigures:
  - { collective: all_reduce, at: 1G, busbw: 1, source: s }
  - { collective: all_reduce, at: 2G, busbw: 1, nccl: '<2.28', cta_policy: 0, source: s }
";
        let p = parse("p.yaml", text).unwrap();
        let keys: Vec<String> = p.figures.iter().map(Figure::label).collect();
        assert_eq!(
            keys,
            [
                "all_reduce 1G [NCCL 2.28, CTA policy 1]",
                "all_reduce 2G [NCCL <2.28, CTA policy 0]"
            ]
        );
        let bad = text.replace("'2.28'", "'2.x'");
        let e = parse("p.yaml", &bad).unwrap_err().to_string();
        assert!(
            e.starts_with("p.yaml: not a profile: `nccl` at line 4, column 7 is not"),
            "{e}"
        );
        assert!(!e.contains("2.x"), "{e}");
    }

    #[test]
    fn the_measured_2xh200_row_matches_its_fixture() {
        let p = named("h200-sxm-2", None).unwrap();
        let f = p.figure(Collective::AllReduce, 8 << 30).unwrap();
        assert_eq!(f.busbw, 345.0);
        assert_eq!(f.label(), "all_reduce >= 4G [NCCL >=2.28, <2.29]");
        assert_eq!(
            p.figure(Collective::AllReduce, 1 << 30).unwrap().busbw,
            330.0
        );
        assert!(p.figure(Collective::ReduceScatter, 1 << 30).is_none());
        let all = embedded();
        let name = |g: &str, n: u64| pick(&all, g, n).map(|p| p.name.as_str());
        assert_eq!(name("NVIDIA H200", 2), Some("h200-sxm-2"));
        assert_eq!(name("NVIDIA H100 80GB HBM3", 8), Some("h100-sxm-8"));
        assert_eq!(name("NVIDIA A100-SXM4-80GB", 8), Some("a100-sxm-8"));
        assert_eq!(name("NVIDIA GB200", 8), None);
        assert_eq!(name("NVIDIA GB200", 72), Some("gb200-nvl72"));
        let e = named("h200-sxm8", None).unwrap_err().to_string();
        assert!(e.contains("did you mean `h200-sxm-8`"), "{e}");
    }
}
