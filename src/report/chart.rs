//! busbw against requested size, one SVG per job, and time against size when the plan has a
//! `time` criterion. Both axes are logarithmic: 8 B and 8 GiB both show, and so do 0.01 GB/s
//! and 400 GB/s — on a linear busbw axis everything below a few hundred KiB sits on zero and a
//! small-message regression is invisible. The plan's thresholds are red lines over the sizes
//! they cover, in-place is dashed against solid out-of-place, and the baseline is a grey dashed
//! overlay, so a reader sees a drop and where it starts at a glance.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Exporter, ReportError, ReportInput};
use crate::grade::{JobVerdict, measured_sizes, median_busbw, median_of, size};
use crate::plan::Check;
use crate::results::{CellStatus, JobResult, Placement};
use crate::units::SizeSelector;

pub(crate) const WIDTH: u32 = 960;
pub(crate) const HEIGHT: u32 = 380;
pub(crate) const OUT_OF_PLACE: RGBColor = RGBColor(31, 119, 180);
const IN_PLACE: RGBColor = RGBColor(255, 127, 14);
const BASELINE: RGBColor = RGBColor(110, 110, 110);
pub(crate) const THRESHOLD: RGBColor = RGBColor(214, 39, 40);
/// Split groups: distinct from the placement, baseline and threshold colours.
pub(crate) const GROUP_COLORS: [RGBColor; 8] = [
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

/// File name of a job's time chart (drawn when the plan judges `time`).
pub fn time_file_name(index: usize, id: &str) -> String {
    file_name(index, id).replace(".svg", "-time.svg")
}

/// (x = log2 size, busbw) at every size with a positive bandwidth (sizes that move no bytes
/// have none, and a log axis has no zero).
fn curve(r: &JobResult, p: Placement) -> Vec<(f64, f64)> {
    measured_sizes(r)
        .into_iter()
        .filter(|&s| s > 0)
        .filter_map(|s| Some(((s as f64).log2(), median_busbw(r, s, p)?)))
        .filter(|p| p.1 > 0.0 && p.1.is_finite())
        .collect()
}

/// (x = log2 size, median time in µs) at every size with a positive time.
fn time_curve(r: &JobResult, p: Placement) -> Vec<(f64, f64)> {
    measured_sizes(r)
        .into_iter()
        .filter(|&s| s > 0)
        .filter_map(|s| {
            let mut v: Vec<f64> = r
                .repeats
                .iter()
                .flat_map(|x| &x.rows)
                .filter(|row| row.requested == s)
                .filter_map(|row| row.cell(p))
                .filter(|c| c.status == CellStatus::Ok)
                .filter_map(|c| c.time_us)
                .collect();
            Some(((s as f64).log2(), median_of(&mut v)?))
        })
        .filter(|p| p.1 > 0.0 && p.1.is_finite())
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

/// One line of a chart: its legend name, colour, whether it is dashed, and its points
/// (x = log2 size, y = the value, before the log axis is applied).
struct Series {
    name: String,
    color: RGBColor,
    dashed: bool,
    width: u32,
    markers: bool,
    pts: Vec<(f64, f64)>,
}

/// A threshold as a horizontal segment over the sizes it covers (x in log2 size).
struct Limit {
    value: f64,
    from: f64,
    to: f64,
    label: String,
}

/// The thresholds of `j` that `pick` accepts (busbw ones for the bandwidth chart, time ones for
/// the latency chart), each spanning only the swept sizes its `at` selects.
fn limits(j: &JobVerdict, lo: f64, hi: f64, pick: impl Fn(&Check) -> Option<f64>) -> Vec<Limit> {
    j.criteria
        .iter()
        .filter_map(|c| {
            let crit = c.criterion.as_ref()?;
            let value = pick(&crit.check)?;
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
            let (from, to) = (from.max(lo - 0.4), to.min(hi + 0.4));
            (from <= to && value > 0.0).then(|| Limit {
                value,
                from,
                to,
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

/// A value on a log axis as a reader writes it: `0.002`, `0.5`, `12`, `340`, `25000`.
pub(crate) fn plain(v: f64) -> String {
    if !v.is_finite() || v <= 0.0 {
        // Linear axes start at 0; nothing else reaches here.
        format!("{v}")
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        let s = format!("{v:.1}");
        s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
    } else {
        let digits = (-v.log10()).ceil() as usize + 1;
        let s = format!("{v:.digits$}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Where a log axis from `ylo` to `yhi` (log10 values) is labelled, and how: every decade when
/// the axis spans three or more, else the 1-2-5 steps, else every digit, else (a narrow range
/// around one value) four even steps. Every reading of a log axis needs labels inside a decade.
fn y_marks(ylo: f64, yhi: f64) -> Vec<(f64, String)> {
    let (first, last) = (ylo.floor() as i32, yhi.ceil() as i32);
    let marks = |steps: &[f64]| -> Vec<(f64, String)> {
        (first..=last)
            .flat_map(|k| steps.iter().map(move |m| m * 10f64.powi(k)))
            .map(|v| (v.log10(), v))
            .filter(|(y, _)| *y >= ylo && *y <= yhi)
            .map(|(y, v)| (y, plain(v)))
            .collect()
    };
    for steps in [
        &[1.0][..],
        &[1.0, 2.0, 5.0],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
    ] {
        let m = marks(steps);
        if m.len() >= 3 {
            return m;
        }
    }
    (1..=4)
        .map(|i| {
            let y = ylo + (yhi - ylo) * f64::from(i) / 5.0;
            (y, plain(10f64.powf(y)))
        })
        .collect()
}

/// Everything one chart draws.
struct Chart<'a> {
    job: &'a str,
    y_desc: &'static str,
    lines: Vec<Series>,
    limits: Vec<Limit>,
}

impl Chart<'_> {
    fn svg(self) -> Result<String, ReportError> {
        let err = |e: &dyn std::fmt::Display| ReportError::Chart {
            job: self.job.to_string(),
            message: e.to_string(),
        };
        let xs = self.lines.iter().flat_map(|s| s.pts.iter().map(|p| p.0));
        let (lo, hi) = match (xs.clone().reduce(f64::min), xs.reduce(f64::max)) {
            (Some(a), Some(b)) => (a, b.max(a + 1.0)),
            _ => (0.0, 1.0),
        };
        let ys: Vec<f64> = self
            .lines
            .iter()
            .flat_map(|s| s.pts.iter().map(|p| p.1))
            .chain(self.limits.iter().map(|l| l.value))
            .filter(|v| *v > 0.0 && v.is_finite())
            .map(f64::log10)
            .collect();
        let (ylo, yhi) = match (
            ys.iter().copied().reduce(f64::min),
            ys.iter().copied().reduce(f64::max),
        ) {
            (Some(a), Some(b)) => (a, b.max(a + 0.3)),
            _ => (0.0, 1.0),
        };
        // Room below the lowest point, and above the highest for the legend.
        let (ylo, yhi) = (
            ylo - 0.12 * (yhi - ylo) - 0.05,
            yhi + 0.45 * (yhi - ylo) + 0.05,
        );
        let marks = y_marks(ylo, yhi);
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(&e))?;
            let mut chart = ChartBuilder::on(&root)
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(64)
                .build_cartesian_2d((lo - 0.3)..(hi + 0.3), ylo..yhi)
                .map_err(|e| err(&e))?;
            let span = hi - lo + 1.0;
            let every = (span / MAX_X_LABELS).ceil().max(1.0) as i64;
            let fmt = move |x: &f64| x_label(*x, every);
            // The y grid and labels are drawn here at `marks`, not by plotters, whose evenly
            // spaced ticks on a log10 axis would land between round values.
            chart
                .configure_mesh()
                .x_labels(span as usize + 2)
                .x_label_formatter(&fmt)
                .disable_y_mesh()
                .y_labels(2)
                .y_label_formatter(&|_| String::new())
                .set_tick_mark_size(LabelAreaPosition::Left, 0)
                .y_desc(self.y_desc)
                .x_desc("requested size (log scale)")
                .max_light_lines(0)
                .bold_line_style(RGBColor(225, 225, 225))
                .label_style(("sans-serif", 15))
                .draw()
                .map_err(|e| err(&e))?;
            let grid = RGBColor(225, 225, 225);
            for (y, _) in &marks {
                chart
                    .draw_series(LineSeries::new(
                        [(lo - 0.3, *y), (hi + 0.3, *y)],
                        grid.stroke_width(1),
                    ))
                    .map_err(|e| err(&e))?;
            }
            for (y, text) in &marks {
                let (px, py) = chart.backend_coord(&(lo - 0.3, *y));
                root.draw(&Text::new(
                    text.clone(),
                    (px - 6, py),
                    ("sans-serif", 15)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Right, VPos::Center)),
                ))
                .map_err(|e| err(&e))?;
            }
            for l in &self.limits {
                let y = l.value.log10();
                chart
                    .draw_series(LineSeries::new(
                        [(l.from, y), (l.to, y)],
                        THRESHOLD.stroke_width(2),
                    ))
                    .map_err(|e| err(&e))?
                    .label(l.label.clone())
                    .legend(|(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], THRESHOLD.stroke_width(2))
                    });
            }
            for s in &self.lines {
                let c = s.color;
                let style = c.stroke_width(s.width);
                let pts: Vec<(f64, f64)> = s.pts.iter().map(|p| (p.0, p.1.log10())).collect();
                let drawn = if s.dashed {
                    chart.draw_series(DashedLineSeries::new(pts.iter().copied(), 7, 4, style))
                } else {
                    chart.draw_series(LineSeries::new(pts.iter().copied(), style))
                };
                // The legend's sample: two dashes for a dashed line, else one stroke (drawn as
                // two touching halves so both are one element type).
                let gap = if s.dashed { 2 } else { 0 };
                drawn
                    .map_err(|e| err(&e))?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        EmptyElement::at((x, y))
                            + PathElement::new([(0, 0), (9 - gap, 0)], style)
                            + PathElement::new([(9 + gap, 0), (18, 0)], style)
                    });
                if s.markers {
                    if s.dashed {
                        chart
                            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.stroke_width(1))))
                            .map_err(|e| err(&e))?;
                    } else {
                        chart
                            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))
                            .map_err(|e| err(&e))?;
                    }
                }
            }
            legend(&mut chart).map_err(|e| err(&e))?;
            root.present().map_err(|e| err(&e))?;
        }
        Ok(super::xml::chars(&svg).into_owned())
    }
}

/// The legend every chart draws: upper left, on a translucent white box, so the lines behind
/// it still show.
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(|e| e.to_string())
}

/// The out-of-place (solid) and in-place (dashed) lines of `r`.
fn placements(
    r: &JobResult,
    value: impl Fn(&JobResult, Placement) -> Vec<(f64, f64)>,
) -> Vec<Series> {
    [
        (Placement::OutOfPlace, OUT_OF_PLACE, false),
        (Placement::InPlace, IN_PLACE, true),
    ]
    .into_iter()
    .map(|(p, color, dashed)| Series {
        name: p.label().to_string(),
        color,
        dashed,
        width: 2,
        markers: true,
        pts: value(r, p),
    })
    .filter(|s| !s.pts.is_empty())
    .collect()
}

fn baseline_line(pts: Vec<(f64, f64)>) -> Option<Series> {
    (!pts.is_empty()).then(|| Series {
        name: "baseline (out-of-place)".into(),
        color: BASELINE,
        dashed: true,
        width: 2,
        markers: false,
        pts,
    })
}

/// The x range the data of `lines` covers, for thresholds without `at`.
fn x_range(lines: &[Series]) -> (f64, f64) {
    let xs = lines.iter().flat_map(|s| s.pts.iter().map(|p| p.0));
    match (xs.clone().reduce(f64::min), xs.reduce(f64::max)) {
        (Some(a), Some(b)) => (a, b),
        _ => (0.0, 1.0),
    }
}

impl ChartExporter {
    /// The busbw SVG of one job — over time per repeat for a soak (`super::soak`), else
    /// against size; `None` when it has no results to draw.
    pub fn job(j: &JobVerdict) -> Result<Option<String>, ReportError> {
        let Some(src) = &j.source else {
            return Ok(None);
        };
        if let Some(soak) = super::soak::Soak::of(j) {
            return soak.svg(&j.id).map(Some);
        }
        let r = &src.result;
        let mut lines: Vec<Series> = Vec::new();
        lines.extend(
            j.baseline
                .as_ref()
                .and_then(|b| baseline_line(curve(&b.result, Placement::OutOfPlace))),
        );
        for (k, (color, pts)) in group_curves(r).into_iter().enumerate() {
            lines.push(Series {
                name: format!("group {color} (out-of-place)"),
                color: GROUP_COLORS[k % GROUP_COLORS.len()],
                dashed: false,
                width: 1,
                markers: false,
                pts: pts
                    .into_iter()
                    .filter(|p| p.1 > 0.0 && p.1.is_finite())
                    .collect(),
            });
        }
        lines.extend(placements(r, curve));
        let (lo, hi) = x_range(&lines);
        let limits = limits(j, lo, hi, |c| match c {
            Check::Busbw(t) => Some(t.value),
            _ => None,
        });
        Chart {
            job: &j.id,
            y_desc: "busbw (GB/s, log scale)",
            lines,
            limits,
        }
        .svg()
        .map(Some)
    }

    /// The time SVG of one job, drawn when its plan judges `time`: latency is what small sizes
    /// are about, and a time limit is easiest to read against the time curve. `None` otherwise.
    pub fn latency(j: &JobVerdict) -> Result<Option<String>, ReportError> {
        let Some(src) = &j.source else {
            return Ok(None);
        };
        let has_time = j.criteria.iter().any(|c| {
            c.criterion
                .as_ref()
                .is_some_and(|c| matches!(c.check, Check::Time(_)))
        });
        if !has_time {
            return Ok(None);
        }
        let mut lines: Vec<Series> = Vec::new();
        lines.extend(
            j.baseline
                .as_ref()
                .and_then(|b| baseline_line(time_curve(&b.result, Placement::OutOfPlace))),
        );
        lines.extend(placements(&src.result, time_curve));
        if lines.is_empty() {
            return Ok(None);
        }
        let (lo, hi) = x_range(&lines);
        let limits = limits(j, lo, hi, |c| match c {
            Check::Time(t) => Some(t.value),
            _ => None,
        });
        Chart {
            job: &j.id,
            y_desc: "time (us, log scale)",
            lines,
            limits,
        }
        .svg()
        .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axis_labels_read_as_numbers() {
        assert_eq!(plain(0.002), "0.002");
        assert_eq!(plain(0.5), "0.5");
        assert_eq!(plain(12.0), "12");
        assert_eq!(plain(340.0), "340");
        assert_eq!(plain(0.0), "0", "a linear axis' origin");
        let labels = |lo: f64, hi: f64| -> Vec<String> {
            y_marks(lo.log10(), hi.log10())
                .into_iter()
                .map(|m| m.1)
                .collect()
        };
        // Many decades: decades only.
        assert_eq!(labels(0.003, 500.0), ["0.01", "0.1", "1", "10", "100"]);
        // Two decades: 1-2-5.
        assert_eq!(labels(0.009, 0.2), ["0.01", "0.02", "0.05", "0.1", "0.2"]);
        // Inside one decade: every digit; a narrow band: even steps, still labelled.
        assert_eq!(labels(150.0, 450.0), ["200", "300", "400"]);
        assert_eq!(labels(340.0, 346.0).len(), 4);
    }
}
