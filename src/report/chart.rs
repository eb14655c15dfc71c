//! busbw against requested size, one SVG per job: log-scale (base 2) x axis so 8 B and 8 GiB both
//! show, the plan's busbw thresholds as red lines over the sizes they cover, and the baseline as
//! a dashed overlay, so a reader sees a drop and where it starts at a glance.

use plotters::prelude::*;

use super::{Exporter, ReportError, ReportInput};
use crate::grade::{JobVerdict, measured_sizes, median_busbw, median_of, size};
use crate::plan::Check;
use crate::results::{JobResult, Placement};
use crate::units::SizeSelector;

const WIDTH: u32 = 960;
const HEIGHT: u32 = 360;
const OUT_OF_PLACE: RGBColor = RGBColor(31, 119, 180);
const IN_PLACE: RGBColor = RGBColor(255, 127, 14);
const BASELINE: RGBColor = RGBColor(110, 110, 110);
const THRESHOLD: RGBColor = RGBColor(214, 39, 40);
/// Split groups: distinct from the placement, baseline and threshold colours.
const GROUP_COLORS: [RGBColor; 8] = [
    RGBColor(148, 103, 189),
    RGBColor(44, 160, 44),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(57, 59, 121),
    RGBColor(127, 127, 127),
];

/// The chart of the job at `index` in the grade.
pub struct ChartExporter {
    pub index: usize,
}

impl Exporter for ChartExporter {
    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>, ReportError> {
        match input.grade.jobs.get(self.index) {
            Some(j) => Ok(ChartExporter::job(j)?.unwrap_or_default().into_bytes()),
            None => Ok(Vec::new()),
        }
    }
}

/// File name of a job's chart inside the report directory.
pub fn file_name(index: usize, id: &str) -> String {
    let slug: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    format!("charts/{:02}-{slug}.svg", index + 1)
}

/// (x = log2 size, busbw) at every size with a bandwidth (sizes that move no bytes left out).
fn curve(r: &JobResult, p: Placement) -> Vec<(f64, f64)> {
    measured_sizes(r)
        .into_iter()
        .filter(|&s| s > 0)
        .filter_map(|s| Some(((s as f64).log2(), median_busbw(r, s, p)?)))
        .collect()
}

/// Most split groups drawn; beyond that the legend would hide the chart.
const MAX_GROUP_LINES: usize = 8;

/// Per split group: (color, (x = log2 size, median group busbw)) where `baton run` recorded
/// per-group figures (out-of-place).
fn group_curves(r: &JobResult) -> Vec<(u64, Vec<(f64, f64)>)> {
    r.groups
        .iter()
        .take(MAX_GROUP_LINES)
        .map(|g| {
            let pts = measured_sizes(r)
                .into_iter()
                .filter(|&s| s > 0)
                .filter_map(|s| {
                    let mut v: Vec<f64> = r
                        .repeats
                        .iter()
                        .flat_map(|x| &x.rows)
                        .filter(|row| row.requested == s)
                        .filter_map(|row| row.out_of_place.as_ref())
                        .flat_map(|c| c.groups.iter().filter(|x| x.color == g.color))
                        .map(|x| x.busbw)
                        .collect();
                    Some(((s as f64).log2(), median_of(&mut v)?))
                })
                .collect();
            (g.color, pts)
        })
        .filter(|(_, pts): &(u64, Vec<(f64, f64)>)| !pts.is_empty())
        .collect()
}

/// A named, coloured line of (log2 size, busbw) points.
type Series = (&'static str, RGBColor, Vec<(f64, f64)>);

/// A busbw threshold as a horizontal segment over the sizes it covers.
struct Limit {
    value: f64,
    from: f64,
    to: f64,
    label: String,
}

fn limits(j: &JobVerdict, lo: f64, hi: f64) -> Vec<Limit> {
    j.criteria
        .iter()
        .filter_map(|c| {
            let crit = c.criterion.as_ref()?;
            let Check::Busbw(t) = &crit.check else {
                return None;
            };
            let (from, to) = match crit.at {
                None => (lo, hi),
                Some(SizeSelector::Exactly(s)) => {
                    let x = (s.max(1) as f64).log2();
                    (x - 0.4, x + 0.4)
                }
                Some(SizeSelector::Range(a, b)) => {
                    ((a.max(1) as f64).log2(), (b.max(1) as f64).log2())
                }
                Some(SizeSelector::Compare(cmp, s)) => {
                    let x = (s.max(1) as f64).log2();
                    match cmp {
                        crate::units::Cmp::Ge | crate::units::Cmp::Gt => (x, hi),
                        crate::units::Cmp::Le | crate::units::Cmp::Lt => (lo, x),
                    }
                }
            };
            Some(Limit {
                value: t.value,
                from: from.max(lo),
                to: to.min(hi),
                label: c.text.clone(),
            })
        })
        .collect()
}

/// Most size labels under the x axis before they collide.
const MAX_X_LABELS: f64 = 12.0;

/// Labels powers of two on every `every`-th doubling (log2 x), nothing in between.
fn x_label(x: f64, every: i64) -> String {
    let r = x.round();
    if (x - r).abs() < 1e-9 && r >= 0.0 && (r as i64) % every == 0 {
        size(2f64.powi(r as i32) as u64)
    } else {
        String::new()
    }
}

impl ChartExporter {
    /// The SVG of one job; `None` when it has no results to draw.
    pub fn job(j: &JobVerdict) -> Result<Option<String>, ReportError> {
        let Some(src) = &j.source else {
            return Ok(None);
        };
        let r = &src.result;
        let series: Vec<Series> = [
            (
                "out-of-place",
                OUT_OF_PLACE,
                curve(r, Placement::OutOfPlace),
            ),
            ("in-place", IN_PLACE, curve(r, Placement::InPlace)),
        ]
        .into_iter()
        .filter(|s| !s.2.is_empty())
        .collect();
        let groups = group_curves(r);
        let base = j
            .baseline
            .as_ref()
            .map(|b| curve(&b.result, Placement::OutOfPlace))
            .unwrap_or_default();
        let xs: Vec<f64> = series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.0))
            .chain(base.iter().map(|p| p.0))
            .collect();
        let (lo, hi) = match (
            xs.iter().copied().reduce(f64::min),
            xs.iter().copied().reduce(f64::max),
        ) {
            (Some(a), Some(b)) => (a, b.max(a + 1.0)),
            _ => (0.0, 1.0),
        };
        let limits = limits(j, lo, hi);
        let ymax = series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.1))
            .chain(base.iter().map(|p| p.1))
            .chain(groups.iter().flat_map(|g| g.1.iter().map(|p| p.1)))
            .chain(limits.iter().map(|l| l.value))
            .fold(1.0, f64::max)
            * 1.12;
        let err = |e: &dyn std::fmt::Display| ReportError::Chart {
            job: j.id.clone(),
            message: e.to_string(),
        };
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(&e))?;
            let mut chart = ChartBuilder::on(&root)
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(64)
                .build_cartesian_2d((lo - 0.3)..(hi + 0.3), 0.0..ymax)
                .map_err(|e| err(&e))?;
            let span = hi - lo + 1.0;
            let every = (span / MAX_X_LABELS).ceil().max(1.0) as i64;
            let fmt = move |x: &f64| x_label(*x, every);
            chart
                .configure_mesh()
                .x_labels(span as usize + 2)
                .x_label_formatter(&fmt)
                .y_label_formatter(&|v: &f64| {
                    // Whole GB/s once the axis is tall enough; otherwise keep the fraction that
                    // tells the ticks apart.
                    if ymax >= 20.0 {
                        format!("{v:.0}")
                    } else if ymax >= 2.0 {
                        format!("{v:.1}")
                    } else {
                        format!("{v:.2}")
                    }
                })
                .y_desc("busbw (GB/s)")
                .x_desc("requested size (log scale)")
                .max_light_lines(0)
                .bold_line_style(RGBColor(225, 225, 225))
                .label_style(("sans-serif", 15))
                .draw()
                .map_err(|e| err(&e))?;
            if !base.is_empty() {
                chart
                    .draw_series(DashedLineSeries::new(
                        base.iter().copied(),
                        6,
                        4,
                        BASELINE.stroke_width(2),
                    ))
                    .map_err(|e| err(&e))?
                    .label("baseline (out-of-place)")
                    .legend(|(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], BASELINE.stroke_width(2))
                    });
            }
            for l in &limits {
                chart
                    .draw_series(LineSeries::new(
                        [(l.from, l.value), (l.to, l.value)],
                        THRESHOLD.stroke_width(2),
                    ))
                    .map_err(|e| err(&e))?
                    .label(l.label.clone())
                    .legend(|(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], THRESHOLD.stroke_width(2))
                    });
            }
            for (k, (color, pts)) in groups.iter().enumerate() {
                let c = GROUP_COLORS[k % GROUP_COLORS.len()];
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(1)))
                    .map_err(|e| err(&e))?
                    .label(format!("group {color}"))
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], c.stroke_width(1))
                    });
            }
            for (name, color, pts) in &series {
                let c = *color;
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                    .map_err(|e| err(&e))?
                    .label(*name)
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2))
                    });
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))
                    .map_err(|e| err(&e))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(200, 200, 200))
                .label_font(("sans-serif", 15))
                .draw()
                .map_err(|e| err(&e))?;
            root.present().map_err(|e| err(&e))?;
        }
        Ok(Some(svg))
    }
}
