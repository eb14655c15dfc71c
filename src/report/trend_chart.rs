//! The trend chart of `baton history show --chart`: busbw at each job's key size, run after run,
//! one line per job and host set, in the report charts' style, so a slow slide over weeks shows
//! as a slope rather than as a column of numbers.

use plotters::prelude::*;

use super::chart::{GROUP_COLORS, HEIGHT, OUT_OF_PLACE, WIDTH, legend, plain};
use crate::history::TrendRow;

/// Most lines drawn; beyond that the legend hides the chart (filter with --job or --node).
pub const MAX_LINES: usize = 8;

#[derive(Debug, thiserror::Error)]
#[error("cannot draw the trend chart: {0}")]
pub struct ChartError(String);

/// The SVG of `rows` (oldest first, as `Store::rows` returns them).
pub fn svg(rows: &[TrendRow]) -> Result<String, ChartError> {
    let err = |e: &dyn std::fmt::Display| ChartError(e.to_string());
    let mut dates: Vec<&str> = rows.iter().map(|r| r.date.as_str()).collect();
    dates.dedup();
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in rows {
        let (Some(b), Some(s)) = (r.busbw, r.key_size) else {
            continue;
        };
        let x = dates.iter().position(|d| *d == r.date).unwrap_or(0) as f64;
        let name = format!(
            "{} at {} on {}",
            r.job,
            crate::grade::size(s),
            if r.hosts.is_empty() { "?" } else { &r.hosts }
        );
        let full = lines.len() >= MAX_LINES;
        match lines.iter_mut().find(|l| l.0 == name) {
            Some(l) => l.1.push((x, b)),
            None if !full => lines.push((name, vec![(x, b)])),
            None => {}
        }
    }
    let ymax = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1e-3)
        // Headroom for the legend, a line per series.
        * (1.15 + 0.08 * lines.len() as f64);
    let n = dates.len().max(2) as f64;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..(n - 0.5), 0.0..ymax)
            .map_err(|e| err(&e))?;
        let every = (dates.len() / 8).max(1);
        // Day alone when each run has its own day, else day and time.
        let mut days: Vec<&str> = dates.iter().map(|d| d.get(..10).unwrap_or(d)).collect();
        days.dedup();
        let same_day = days.len() < dates.len();
        let label = |x: &f64| {
            let i = x.round();
            if (x - i).abs() > 1e-9 || i < 0.0 || !(i as usize).is_multiple_of(every) {
                return String::new();
            }
            dates
                .get(i as usize)
                .map(|d| match (same_day, d.get(5..16)) {
                    (true, Some(t)) => t.replace('T', " "),
                    _ => d.get(..10).unwrap_or(d).to_string(),
                })
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .x_labels(dates.len().max(2) + 1)
            .x_label_formatter(&label)
            .y_label_formatter(&|v: &f64| plain(*v))
            .y_desc("busbw at the key size (GB/s)")
            .x_desc("run date")
            .max_light_lines(0)
            .bold_line_style(RGBColor(225, 225, 225))
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(|e| err(&e))?;
        for (k, (name, pts)) in lines.iter().enumerate() {
            let c = if k == 0 {
                OUT_OF_PLACE
            } else {
                GROUP_COLORS[(k - 1) % GROUP_COLORS.len()]
            };
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))
                .map_err(|e| err(&e))?;
        }
        legend(&mut chart).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(super::xml::chars(&out).into_owned())
}
