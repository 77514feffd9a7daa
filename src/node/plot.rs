//! `--plot`: a PNG of the replay, without text (no system fonts needed): the top panel shows every
//! motor value over bag time (held between messages), the bottom panel every area's fired count
//! per burst, scaled to its own maximum. The zero line of the top panel is grey; the colours are
//! listed by [`legend`].

use std::path::Path;

use plotters::prelude::*;

use super::replay::ReplaySummary;

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Colour names in plot order.
const NAMES: [&str; 8] = ["blue", "red", "green", "orange", "purple", "brown", "pink", "cyan"];

/// What each line's colour means, one line of text per series.
pub fn legend(s: &ReplaySummary, area_ids: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    for m in &s.motor {
        for l in &m.labels {
            out.push(format!("top {}: {} {}", NAMES[i % 8], m.topic, l));
            i += 1;
        }
    }
    for (j, a) in area_ids.iter().enumerate() {
        out.push(format!("bottom {}: area {} (fired per burst / its maximum)", NAMES[j % 8], a));
    }
    out
}

/// Draw the plot into `path` (PNG, 1000 x 600).
pub fn draw(s: &ReplaySummary, path: &Path) -> Result<(), String> {
    let (w, h) = (1000u32, 600u32);
    let mut buf = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (top, bottom) = root.split_vertically(h / 2);
        let t_max = s.records.last().map_or(1.0, |r| r.t).max(1e-3);

        // motor values
        let series: Vec<Vec<(f64, f64)>> = {
            let n: usize = s.motor.iter().map(|m| m.labels.len()).sum();
            (0..n).map(|j| s.records.iter().map(|r| (r.t, r.motor.iter().flatten().nth(j).copied().unwrap_or(0.0))).collect()).collect()
        };
        let y = series.iter().flatten().map(|p| p.1.abs()).fold(0.0f64, f64::max).max(1e-6) * 1.1;
        let mut chart = ChartBuilder::on(&top).margin(15).build_cartesian_2d(0.0..t_max, -y..y).map_err(|e| e.to_string())?;
        frame(&mut chart, t_max, -y, y)?;
        chart.draw_series(LineSeries::new(vec![(0.0, 0.0), (t_max, 0.0)], RGBColor(170, 170, 170))).map_err(|e| e.to_string())?;
        for (j, pts) in series.into_iter().enumerate() {
            chart.draw_series(LineSeries::new(pts, COLOURS[j % 8].stroke_width(2))).map_err(|e| e.to_string())?;
        }

        // area activity
        let areas = s.records.first().map_or(0, |r| r.fired_per_area.len());
        let mut chart = ChartBuilder::on(&bottom).margin(15).build_cartesian_2d(0.0..t_max, -0.05..1.05f64).map_err(|e| e.to_string())?;
        frame(&mut chart, t_max, -0.05, 1.05)?;
        for a in 0..areas {
            let max = s.records.iter().map(|r| r.fired_per_area[a]).max().unwrap_or(0).max(1) as f64;
            let pts: Vec<(f64, f64)> = s.records.iter().map(|r| (r.t, r.fired_per_area[a] as f64 / max)).collect();
            chart.draw_series(LineSeries::new(pts, COLOURS[a % 8])).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    image::save_buffer_with_format(path, &buf, w, h, image::ExtendedColorType::Rgb8, image::ImageFormat::Png)
        .map_err(|e| format!("{}: {e}", path.display()))
}

type Chart<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>>;

/// A box around the panel and a tick every second of bag time (no text).
fn frame(chart: &mut Chart<'_, '_>, t_max: f64, lo: f64, hi: f64) -> Result<(), String> {
    let black = RGBColor(0, 0, 0);
    chart
        .draw_series(LineSeries::new(vec![(0.0, lo), (t_max, lo), (t_max, hi), (0.0, hi), (0.0, lo)], black))
        .map_err(|e| e.to_string())?;
    let tick = (hi - lo) * 0.03;
    let mut t = 1.0;
    while t < t_max {
        chart.draw_series(LineSeries::new(vec![(t, lo), (t, lo + tick)], black)).map_err(|e| e.to_string())?;
        t += 1.0;
    }
    Ok(())
}
