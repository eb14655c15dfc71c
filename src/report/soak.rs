//! A soak — one size, many repeats — drawn as what it asks: busbw of each repeat over time,
//! the median of the repeats, the band its `variance` criterion allows around it (±5%), and the
//! worst repeat marked. On the busbw-against-size chart a soak is one dot: every repeat at one
//! size, the drift that a soak exists to catch invisible.

use plotters::prelude::*;

use super::ReportError;
use super::chart::{HEIGHT, OUT_OF_PLACE, THRESHOLD, WIDTH, legend, plain};
use crate::grade::{JobVerdict, measured_sizes, median_of, size};
use crate::plan::Check;
use crate::results::measure::{exact_busbw, samples};
use crate::results::{CellStatus, JobResult, Placement};

/// What the chart and the report's line say of one soak.
#[derive(Debug, Clone, PartialEq)]
pub struct Soak {
    /// The one requested size.
    pub size: u64,
    /// (seconds since the first repeat started — or the repeat's index when repeats record no
    /// start —, repeat index, out-of-place busbw GB/s), in repeat order.
    pub points: Vec<(f64, u32, f64)>,
    /// Whether x is seconds (every repeat recorded its start) or the repeat's index.
    pub timed: bool,
    pub median: f64,
    /// The `variance` criterion's allowed deviation, in percent, when the plan has one.
    pub band: Option<f64>,
    /// The repeat furthest from the median: (index, busbw, deviation in percent).
    pub worst: (u32, f64, f64),
}

/// Fewest repeats that make a soak: two repeats are a comparison, not a series over time.
const MIN_REPEATS: usize = 3;

impl Soak {
    /// The soak figures of a job that measured one size over at least [`MIN_REPEATS`] repeats.
    pub fn of(j: &JobVerdict) -> Option<Soak> {
        let r = &j.source.as_ref()?.result;
        let [size] = measured_sizes(r)[..] else {
            return None;
        };
        let pts = points(r, size);
        if pts.len() < MIN_REPEATS {
            return None;
        }
        let timed = pts.iter().all(|p| p.0.is_some());
        let points: Vec<(f64, u32, f64)> = pts
            .iter()
            .map(|&(t, k, b)| {
                (
                    if timed {
                        t.unwrap_or(0.0)
                    } else {
                        f64::from(k)
                    },
                    k,
                    b,
                )
            })
            .collect();
        let median = median_of(&mut points.iter().map(|p| p.2).collect::<Vec<f64>>())?;
        let (_, k, b) = points
            .iter()
            .copied()
            .max_by(|a, b| (a.2 - median).abs().total_cmp(&(b.2 - median).abs()))?;
        let deviation = if median > 0.0 {
            (b - median) / median * 100.0
        } else {
            0.0
        };
        Some(Soak {
            size,
            points,
            timed,
            median,
            band: band(j),
            worst: (k, b, deviation),
        })
    }

    /// The figures in one sentence, for Markdown (which shows the chart as a file) and the
    /// chart's caption.
    pub fn line(&self) -> String {
        let (k, b, d) = self.worst;
        let span = match (self.timed, self.points.last()) {
            (true, Some(last)) => format!(" over {:.0} s", last.0),
            _ => String::new(),
        };
        let band = self.band.map_or(String::new(), |p| {
            format!(
                ", band ±{} ({} to {} GB/s)",
                plain(p) + "%",
                plain(self.median * (1.0 - p / 100.0)),
                plain(self.median * (1.0 + p / 100.0))
            )
        });
        format!(
            "Soak at {}: {} repeats{span}, median {} GB/s{band}; worst repeat {k}: {} GB/s ({:+.1}% from the median)",
            size(self.size),
            self.points.len(),
            plain(self.median),
            plain(b),
            d
        )
    }

    /// The SVG: busbw (linear: a soak's values sit within a few percent of each other) per
    /// repeat against time.
    pub fn svg(&self, job: &str) -> Result<String, ReportError> {
        let err = |e: &dyn std::fmt::Display| ReportError::Chart {
            job: job.to_string(),
            message: e.to_string(),
        };
        let (x0, x1) = (0.0, self.points.last().map_or(1.0, |p| p.0).max(1.0));
        let band = self.band.unwrap_or(0.0) / 100.0;
        let ys = self.points.iter().map(|p| p.2);
        let lo = ys.clone().fold(self.median * (1.0 - band), f64::min);
        let hi = ys.fold(self.median * (1.0 + band), f64::max);
        let pad = ((hi - lo) * 0.15).max(self.median * 0.01).max(1e-9);
        // Room above for the legend's four lines.
        let (ylo, yhi) = ((lo - pad).max(0.0), hi + 0.8 * (hi - lo) + 2.0 * pad);
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(&e))?;
            let mut chart = ChartBuilder::on(&root)
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(64)
                .build_cartesian_2d(x0..x1 * 1.02, ylo..yhi)
                .map_err(|e| err(&e))?;
            chart
                .configure_mesh()
                .x_desc(if self.timed {
                    "seconds since the first repeat"
                } else {
                    "repeat"
                })
                .y_desc(format!("busbw at {} (GB/s)", size(self.size)))
                .y_label_formatter(&|v: &f64| plain(*v))
                .max_light_lines(0)
                .bold_line_style(RGBColor(225, 225, 225))
                .label_style(("sans-serif", 15))
                .draw()
                .map_err(|e| err(&e))?;
            if let Some(p) = self.band {
                let (a, b) = (self.median * (1.0 - band), self.median * (1.0 + band));
                chart
                    .draw_series([Rectangle::new(
                        [(x0, a), (x1 * 1.02, b)],
                        OUT_OF_PLACE.mix(0.2).filled(),
                    )])
                    .map_err(|e| err(&e))?
                    .label(format!("±{}% of the median (variance criterion)", plain(p)))
                    .legend(|(x, y)| {
                        Rectangle::new(
                            [(x, y - 5), (x + 18, y + 5)],
                            OUT_OF_PLACE.mix(0.2).filled(),
                        )
                    });
            }
            let median = [(x0, self.median), (x1 * 1.02, self.median)];
            let grey = RGBColor(90, 90, 90);
            chart
                .draw_series(DashedLineSeries::new(median, 7, 4, grey.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(format!("median {} GB/s", plain(self.median)))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], grey.stroke_width(2))
                });
            let line: Vec<(f64, f64)> = self.points.iter().map(|p| (p.0, p.2)).collect();
            chart
                .draw_series(LineSeries::new(line.clone(), OUT_OF_PLACE.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label("busbw per repeat (out-of-place)")
                .legend(|(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], OUT_OF_PLACE.stroke_width(2))
                });
            chart
                .draw_series(
                    line.iter()
                        .map(|p| Circle::new(*p, 3, OUT_OF_PLACE.filled())),
                )
                .map_err(|e| err(&e))?;
            let (k, b, d) = self.worst;
            let x = self.points.iter().find(|p| p.1 == k).map_or(0.0, |p| p.0);
            chart
                .draw_series([Circle::new((x, b), 7, THRESHOLD.stroke_width(2))])
                .map_err(|e| err(&e))?
                .label(format!("worst: repeat {k}, {} GB/s ({d:+.1}%)", plain(b)))
                .legend(|(x, y)| Circle::new((x + 9, y), 5, THRESHOLD.stroke_width(2)));
            legend(&mut chart).map_err(|e| err(&e))?;
            root.present().map_err(|e| err(&e))?;
        }
        Ok(super::xml::chars(&out).into_owned())
    }
}

/// Each repeat's (seconds since the first repeat's start, index, busbw) at `size`, out of place.
fn points(r: &JobResult, size: u64) -> Vec<(Option<f64>, u32, f64)> {
    let start = |k: u32| {
        let s = r
            .repeats
            .iter()
            .find(|x| x.index == k)?
            .started
            .as_deref()?;
        humantime::parse_rfc3339_weak(s).ok()
    };
    let first = r.repeats.iter().filter_map(|x| start(x.index)).min();
    samples(r, size, Placement::OutOfPlace)
        .iter()
        .filter(|s| s.cell.status == CellStatus::Ok)
        .filter_map(|s| {
            let b = exact_busbw(r, s).filter(|b| b.is_finite())?;
            let t = match (start(s.repeat), first) {
                (Some(t), Some(f)) => t.duration_since(f).ok().map(|d| d.as_secs_f64()),
                _ => None,
            };
            Some((t, s.repeat, b))
        })
        .collect()
}

/// The allowed deviation of the job's first `variance` criterion, in percent.
fn band(j: &JobVerdict) -> Option<f64> {
    j.criteria
        .iter()
        .find_map(|c| match &c.criterion.as_ref()?.check {
            Check::Variance(t) => Some(t.value),
            _ => None,
        })
}
