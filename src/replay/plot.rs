//! `--plot`: a PNG of a replay that explains itself (1200 x 800, for a README): a title, the motor
//! commands on top (bag time in seconds, values in their units, a legend inside the panel) and
//! below a heat map of every area's activity per time bin (the fraction of the area's neurons
//! that fired per burst, each row scaled to its own maximum, the scale written beside). Text is
//! drawn with an embedded font (DejaVu Sans, `fonts/`), so no system font is needed.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::FontStyle;

use super::ReplaySummary;
use crate::view::scene::PALETTE;

const FONT: &str = "sans-serif";
const W: u32 = 1200;
const H: u32 = 800;
/// The column of the heat map's scale, and the room for the y labels.
const SCALE_W: u32 = 130;
const LABELS_W: u32 = 110;
/// Time bins of the heat map.
const BINS: usize = 240;

/// What the picture is of (the title's parts).
pub struct PlotTitle<'a> {
    pub genome: &'a str,
    pub bag: &'a str,
    pub backend: &'a str,
    pub rate_hz: f64,
}

fn colour(i: usize) -> RGBColor {
    let [r, g, b] = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Register the embedded font once.
fn font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, include_bytes!("fonts/DejaVuSans.ttf"));
    });
}

/// The unit of a motor value by its label (Twist axes), else none.
fn unit(label: &str) -> &'static str {
    if label.starts_with("linear") {
        " (m/s)"
    } else if label.starts_with("angular") {
        " (rad/s)"
    } else {
        ""
    }
}

/// Draw the plot into `path` (PNG, 1200 x 800). `area_ids`, `area_neurons`: the genome's areas.
pub fn draw(s: &ReplaySummary, title: &PlotTitle<'_>, area_ids: &[String], area_neurons: &[u32], path: &Path) -> Result<(), String> {
    font();
    let mut buf = vec![255u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let heading = format!(
            "{}: {} replayed, {} bursts at {} Hz over {:.1} s on {}",
            title.genome, title.bag, s.bursts, title.rate_hz, s.duration_s, title.backend
        );
        let root = root.titled(&heading, (FONT, 24)).map_err(err)?;
        let t_max = s.records.last().map_or(1.0, |r| r.t).max(1e-3);
        let (top, bottom) = root.split_vertically(H * if s.learning.is_empty() { 45 } else { 33 } / 100);
        motor(s, &top, t_max)?;
        let bottom = if s.learning.is_empty() {
            bottom
        } else {
            // a brain that learns: its plastic mappings' mean weights between the two
            let (middle, bottom) = bottom.split_vertically(H * 27 / 100);
            learned(s, &middle, t_max)?;
            bottom
        };
        heat(s, &bottom, t_max, area_ids, area_neurons)?;
        root.present().map_err(err)?;
    }
    image::save_buffer_with_format(path, &buf, W, H, image::ExtendedColorType::Rgb8, image::ImageFormat::Png)
        .map_err(|e| format!("{}: {e}", path.display()))
}

type Canvas<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// The motor commands over bag time (held between messages), a legend inside.
fn motor(s: &ReplaySummary, area: &Canvas<'_>, t_max: f64) -> Result<(), String> {
    let labels: Vec<String> = s.motor.iter().flat_map(|m| m.labels.iter().map(move |l| format!("{} {l}{}", m.topic, unit(l)))).collect();
    let series: Vec<Vec<(f64, f64)>> = (0..labels.len())
        .map(|j| s.records.iter().map(|r| (r.t, r.motor.iter().flatten().nth(j).copied().unwrap_or(0.0))).collect())
        .collect();
    let y = series.iter().flatten().map(|p| p.1.abs()).fold(0.0f64, f64::max).max(1e-6) * 1.15;
    lines(area, "Motor commands (decoded from the motor areas)", "command", t_max, -y..y, labels, series)
}

/// The mean weight of each plastic mapping's synapses over bag time.
fn learned(s: &ReplaySummary, area: &Canvas<'_>, t_max: f64) -> Result<(), String> {
    let series: Vec<Vec<(f64, f64)>> =
        (0..s.learning_labels.len()).map(|j| s.learning.iter().map(|p| (p.t, p.mean[j])).collect()).collect();
    let y = series.iter().flatten().map(|p| p.1).fold(0.0f64, f64::max).max(1.0) * 1.15;
    let caption = "Learned weights (mean weight of each plastic mapping's synapses, 0..255)";
    lines(area, caption, "weight", t_max, 0.0..y, s.learning_labels.clone(), series)
}

/// Lines over bag time, a legend inside.
fn lines(
    area: &Canvas<'_>,
    caption: &str,
    y_desc: &str,
    t_max: f64,
    y: std::ops::Range<f64>,
    labels: Vec<String>,
    series: Vec<Vec<(f64, f64)>>,
) -> Result<(), String> {
    // the same width and left margin as the heat map below, so the time axes line up
    let (area, _) = area.split_horizontally(W - SCALE_W);
    let mut chart = ChartBuilder::on(&area)
        .caption(caption, (FONT, 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(LABELS_W)
        .build_cartesian_2d(0.0..t_max, y)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("bag time (s)")
        .y_desc(y_desc)
        .axis_desc_style((FONT, 15))
        .label_style((FONT, 13))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    for (j, (pts, label)) in series.into_iter().zip(labels).enumerate() {
        let c = colour(j);
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
    }
    chart
        .configure_series_labels()
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Every area's activity per time bin: rows are areas, the colour the mean fraction of the area
/// that fired per burst in the bin, scaled to the row's maximum (written at the row's end).
fn heat(s: &ReplaySummary, area: &Canvas<'_>, t_max: f64, ids: &[String], neurons: &[u32]) -> Result<(), String> {
    let rows = ids.len().max(1);
    let bins = s.records.len().clamp(1, BINS);
    let mut sum = vec![vec![0.0f64; bins]; rows];
    let mut count = vec![0u32; bins];
    for r in &s.records {
        let b = ((r.t / t_max * bins as f64) as usize).min(bins - 1);
        count[b] += 1;
        for (a, &f) in r.fired_per_area.iter().enumerate().take(rows) {
            sum[a][b] += f as f64 / neurons.get(a).copied().unwrap_or(1).max(1) as f64;
        }
    }
    let (plot, scale) = area.split_horizontally(W - SCALE_W);
    let names = ids.to_vec();
    let mut chart = ChartBuilder::on(&plot)
        .caption("Area activity: fraction of the area firing per burst (each row scaled to its maximum)", (FONT, 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(LABELS_W)
        .build_cartesian_2d(0.0..t_max, 0.0..rows as f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("bag time (s)")
        .y_desc("area")
        .axis_desc_style((FONT, 15))
        .label_style((FONT, 13))
        .y_labels(rows * 2 + 1)
        .y_label_formatter(&|v| {
            let i = *v - 0.5;
            if i >= 0.0 && i.fract().abs() < 1e-6 && (i as usize) < names.len() {
                names[rows - 1 - i as usize].clone()
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(err)?;
    let mut maxima = Vec::with_capacity(rows);
    for (a, row) in sum.iter().enumerate() {
        let means: Vec<f64> = row.iter().zip(&count).map(|(s, &c)| if c > 0 { s / c as f64 } else { 0.0 }).collect();
        let max = means.iter().copied().fold(0.0, f64::max);
        maxima.push(max);
        let y = (rows - 1 - a) as f64;
        let base = colour(a);
        chart
            .draw_series(means.iter().enumerate().map(|(b, &m)| {
                let v = if max > 0.0 { m / max } else { 0.0 };
                let mix = |c: u8| (255.0 - (255.0 - c as f64) * v) as u8;
                let x0 = b as f64 * t_max / bins as f64;
                Rectangle::new([(x0, y), (x0 + t_max / bins as f64, y + 1.0)], RGBColor(mix(base.0), mix(base.1), mix(base.2)).filled())
            }))
            .map_err(err)?;
    }
    // the scale of every row: its maximum, as a percentage of the area
    let text = |t: String, y: i32| Text::new(t, (4, y), (FONT, 13).into_font());
    let top = 12 + 18 + 16;
    let row_h = (scale.dim_in_pixel().1 as i32 - top - 52) / rows as i32;
    scale.draw(&text("row maximum".into(), top - 16)).map_err(err)?;
    for (a, m) in maxima.iter().enumerate() {
        scale.draw(&text(format!("{:.2}%", m * 100.0), top + row_h * a as i32 + row_h / 2 - 6)).map_err(err)?;
    }
    Ok(())
}
