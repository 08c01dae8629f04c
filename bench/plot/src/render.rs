//! Drawing a [`Figure`] with plotters' SVG backend (text stays `<text>` elements: no font
//! files, no C library). HTML wraps the SVGs with a data table, all inline.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::model::*;

/// Width of a figure and height of each chart in it, in pixels.
pub const WIDTH: u32 = 960;
pub const CHART_HEIGHT: u32 = 440;
/// Height of the heading band above the charts.
pub const HEADING_HEIGHT: u32 = 64;

/// The figure's pixel size: (WIDTH, heading + one CHART_HEIGHT per chart).
pub fn figure_size(f: &Figure) -> (u32, u32) {
    (WIDTH, HEADING_HEIGHT + CHART_HEIGHT * f.charts.len().max(1) as u32)
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing the chart failed: {e:?}")
}

/// Position of a value on an axis (log axes draw exponents).
fn to_axis(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Linear => v,
        Scale::Log2 => v.max(f64::MIN_POSITIVE).log2(),
        Scale::Log10 => v.max(f64::MIN_POSITIVE).log10(),
    }
}

fn tick_label(axis: &Axis, v: f64) -> String {
    let whole = (v - v.round()).abs() < 1e-6;
    match axis.scale {
        Scale::Log2 if whole => size_label(v.round().exp2()),
        Scale::Log10 if whole => value_label(10f64.powf(v.round())),
        Scale::Log2 | Scale::Log10 => String::new(),
        Scale::Linear if axis.unit == "s" => seconds_label(v),
        Scale::Linear => value_label(v),
    }
}

/// Ticks wanted on an axis: one per power on log axes (at most 24), about ten on linear ones.
fn tick_count(axis: &Axis) -> usize {
    match axis.scale {
        Scale::Linear => 10,
        s => {
            let n = (to_axis(s, axis.max) - to_axis(s, axis.min)).round() as usize + 1;
            n.clamp(2, 24)
        }
    }
}

fn color(i: usize) -> RGBColor {
    // Distinct on white and for the common colour blindnesses (Okabe–Ito order).
    const C: [RGBColor; 8] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(86, 180, 233),
        RGBColor(230, 159, 0),
        RGBColor(0, 0, 0),
        RGBColor(240, 228, 66),
    ];
    C[i % C.len()]
}

/// A rectangle in the figure's pixels: (x0, y0) top left, (x1, y1) bottom right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
}

impl Rect {
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn contains(&self, (x, y): (i32, i32)) -> bool {
        (self.x0..=self.x1).contains(&x) && (self.y0..=self.y1).contains(&y)
    }
}

/// Where a chart was drawn: the plot area (inside the axes) and the legend box.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChartLayout {
    pub plot: Rect,
    pub legend: Option<Rect>,
}

/// What a chart put on its plot area, in pixels, for placing the legend where it hides least.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ink {
    Point((i32, i32)),
    Box(Rect),
}

/// A legend entry's key: a line (with the series' dot), or a filled box, in a colour.
#[derive(Clone, Copy)]
enum Key {
    Line(RGBColor),
    Dotted(RGBColor),
    Fill(RGBColor),
}

const LEGEND_FONT: u32 = 13;
const LEGEND_ROW: i32 = 18;
/// Text width per character at [`LEGEND_FONT`], a little over a sans-serif average, so the box
/// is never narrower than its text (no font metrics without loading fonts).
const LEGEND_CHAR_W: f64 = 7.0;
/// The overflow/underflow bins' colour (Okabe–Ito vermillion, apart from the bars' blue).
const EDGE: RGBColor = RGBColor(213, 94, 0);

/// The legend box's pixel size for these labels.
pub fn legend_size<'a>(labels: impl IntoIterator<Item = &'a str>) -> (i32, i32) {
    let (mut n, mut chars) = (0, 0);
    for l in labels {
        n += 1;
        chars = chars.max(l.chars().count());
    }
    (40 + (chars as f64 * LEGEND_CHAR_W).ceil() as i32, 8 + LEGEND_ROW * n)
}

/// The corner of `plot` (inset 8 px) where a legend of `size` covers the fewest inked points
/// and boxes; ties go upper left, upper right, lower right, lower left.
pub fn legend_corner(plot: Rect, size: (i32, i32), ink: &[Ink]) -> Rect {
    let (w, h) = size;
    let (l, r, t, b) = (plot.x0 + 8, plot.x1 - 8 - w, plot.y0 + 8, plot.y1 - 8 - h);
    let corners = [(l, t), (r, t), (r, b), (l, b)].map(|(x, y)| Rect { x0: x, y0: y, x1: x + w, y1: y + h });
    let covered = |c: &Rect| {
        ink.iter()
            .filter(|i| match i {
                Ink::Point(p) => c.contains(*p),
                Ink::Box(bx) => c.overlaps(bx),
            })
            .count()
    };
    corners.into_iter().min_by_key(covered).expect("four corners")
}

type Ctx<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The x range drawn: the axis, plus a slot past each end that has an edge bin.
fn x_extent(c: &Chart, x0: f64, x1: f64) -> (f64, f64, f64) {
    let slot = if c.edges.is_empty() { 0.0 } else { (x1 - x0) * 0.12 };
    let lo = if c.edges.iter().any(|e| !e.above) { x0 - slot } else { x0 };
    let hi = if c.edges.iter().any(|e| e.above) { x1 + slot } else { x1 };
    (lo, hi, slot)
}

/// Points along a polyline in pixels, dense enough that a legend box over a segment is seen.
fn line_ink(ctx: &Ctx, pts: &[(f64, f64)], ink: &mut Vec<Ink>) {
    for w in pts.windows(2) {
        for k in 0..=16 {
            let t = k as f64 / 16.0;
            ink.push(Ink::Point(ctx.backend_coord(&(w[0].0 + (w[1].0 - w[0].0) * t, w[0].1 + (w[1].1 - w[0].1) * t))));
        }
    }
    if let [p] = pts {
        ink.push(Ink::Point(ctx.backend_coord(p)));
    }
}

fn bar(ctx: &Ctx, a: (f64, f64), b: (f64, f64), col: RGBColor, ink: &mut Vec<Ink>) -> Result<(), String> {
    let (p, q) = (ctx.backend_coord(&a), ctx.backend_coord(&b));
    ink.push(Ink::Box(Rect { x0: p.0.min(q.0), y0: p.1.min(q.1), x1: p.0.max(q.0), y1: p.1.max(q.1) }));
    ctx.plotting_area().draw(&Rectangle::new([a, b], col.mix(0.85).filled())).map_err(err)
}

/// Bars of the grouped series side by side in each category, each with its value above it.
fn draw_grouped(ctx: &Ctx, c: &Chart, ink: &mut Vec<Ink>) -> Result<(), String> {
    let groups: Vec<&Series> = c.series.iter().filter(|s| s.style == Style::GroupedBars).collect();
    let m = groups.len().max(1) as f64;
    // A lone figure per run gets a bar, not a slab.
    let w = (0.8 / m).min(0.4);
    let (ys, y0) = (c.y.scale, to_axis(c.y.scale, c.y.min));
    let base = if ys == Scale::Linear { y0.max(0.0) } else { y0 };
    let label_values = groups.iter().map(|s| s.points.len()).sum::<usize>() <= 32;
    for (j, s) in groups.iter().enumerate() {
        let col = color(c.series.iter().position(|x| std::ptr::eq(x, *s)).unwrap_or(j));
        for (x, v) in &s.points {
            let cx = x + (j as f64 - (m - 1.0) / 2.0) * w;
            let top = to_axis(ys, *v).max(base);
            bar(ctx, (cx - w * 0.45, base), (cx + w * 0.45, top), col, ink)?;
            if label_values {
                let style = ("sans-serif", 12).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom));
                ctx.plotting_area().draw(&Text::new(value_label(*v), (cx, top), style)).map_err(err)?;
            }
        }
    }
    Ok(())
}

/// The series (grouped bars aside), with what they inked; returns the legend entries.
fn draw_series_all(ctx: &mut Ctx, c: &Chart, ink: &mut Vec<Ink>) -> Result<Vec<(String, Key)>, String> {
    let (xs, ys) = (c.x.scale, c.y.scale);
    let (x0, x1, y0) = (to_axis(xs, c.x.min), to_axis(xs, c.x.max), to_axis(ys, c.y.min));
    let mut keys = Vec::new();
    let red = RGBColor(220, 40, 40);
    if !c.bands.is_empty() {
        let y1 = to_axis(ys, c.y.max);
        ctx.draw_series(c.bands.iter().map(|b| Rectangle::new([(to_axis(xs, b.x0), y0), (to_axis(xs, b.x1), y1)], red.mix(0.22).filled()))).map_err(err)?;
        keys.push((c.band_label.clone(), Key::Fill(RGBColor(245, 190, 190))));
    }
    for (i, s) in c.series.iter().enumerate() {
        let col = color(i);
        let pts: Vec<(f64, f64)> = s.points.iter().map(|(x, y)| (to_axis(xs, *x), to_axis(ys, *y))).collect();
        match s.style {
            Style::Line => {
                ctx.draw_series(LineSeries::new(pts.clone(), col.stroke_width(2))).map_err(err)?;
                // A lone point gets a marker big enough to be seen.
                let r = if pts.len() == 1 { 5 } else { 3 };
                if pts.len() <= 64 {
                    ctx.draw_series(pts.iter().map(|p| Circle::new(*p, r, col.filled()))).map_err(err)?;
                }
                line_ink(ctx, &pts, ink);
                keys.push((s.name.clone(), Key::Dotted(col)));
            }
            Style::Step => {
                let mut stepped = Vec::with_capacity(pts.len() * 2);
                for w in pts.windows(2) {
                    stepped.push(w[0]);
                    stepped.push((w[1].0, w[0].1));
                }
                stepped.extend(pts.last().copied());
                ctx.draw_series(LineSeries::new(stepped.clone(), col.stroke_width(2))).map_err(err)?;
                line_ink(ctx, &stepped, ink);
                keys.push((s.name.clone(), Key::Line(col)));
            }
            Style::Bars => {
                let half = if pts.len() > 1 { (pts[1].0 - pts[0].0) / 2.0 } else { (x1 - x0) / 40.0 };
                for (x, y) in &pts {
                    bar(ctx, (x - half * 0.9, y0.max(0.0)), (x + half * 0.9, *y), col, ink)?;
                }
                keys.push((s.name.clone(), Key::Fill(col)));
            }
            Style::GroupedBars => keys.push((s.name.clone(), Key::Fill(col))),
        }
    }
    draw_grouped(ctx, c, ink)?;
    Ok(keys)
}

/// Text at a pixel of the chart's area (absolute figure pixels in, area-relative drawn).
fn text_at(area: &DrawingArea<SVGBackend<'_>, Shift>, s: &str, at: (i32, i32), size: u32, col: RGBColor, pos: Pos) -> Result<(), String> {
    let base = area.get_base_pixel();
    let style = ("sans-serif", size).into_font().color(&col).pos(pos);
    area.draw(&Text::new(s.to_string(), (at.0 - base.0, at.1 - base.1), style)).map_err(err)
}

/// Overflow/underflow bins in their slots past the axis ends: a dashed line at the axis end, the
/// bar, its count above it and "> 42.1" where a tick would be. Returns their legend entries.
fn draw_edges(area: &DrawingArea<SVGBackend<'_>, Shift>, ctx: &Ctx, c: &Chart, slot: f64, ink: &mut Vec<Ink>) -> Result<Vec<(String, Key)>, String> {
    let (y0, y1) = (to_axis(c.y.scale, c.y.min), to_axis(c.y.scale, c.y.max));
    let mut keys = Vec::new();
    for e in &c.edges {
        let centre = if e.above { e.bound + slot * 0.55 } else { e.bound - slot * 0.55 };
        let dashes = plotters::element::DashedPathElement::new(vec![(e.bound, y0), (e.bound, y1)], 5, 4, RGBColor(120, 120, 120).stroke_width(1));
        ctx.plotting_area().draw(&dashes).map_err(err)?;
        let top = (e.count as f64).min(y1);
        bar(ctx, (centre - slot * 0.3, y0.max(0.0)), (centre + slot * 0.3, top), EDGE, ink)?;
        let p = ctx.backend_coord(&(centre, top));
        text_at(area, &e.count.to_string(), (p.0, p.1 - 3), 13, EDGE, Pos::new(HPos::Center, VPos::Bottom))?;
        let below_axis = ctx.backend_coord(&(centre, y0));
        let tick = format!("{} {}", if e.above { ">" } else { "<" }, value_label(e.bound));
        text_at(area, &tick, (below_axis.0, below_axis.1 + 6), 12, EDGE, Pos::new(HPos::Center, VPos::Top))?;
        keys.push((e.label.clone(), Key::Fill(EDGE)));
    }
    Ok(keys)
}

/// Category names under a categorical x axis, one per slot.
fn draw_categories(area: &DrawingArea<SVGBackend<'_>, Shift>, ctx: &Ctx, c: &Chart) -> Result<(), String> {
    let y0 = to_axis(c.y.scale, c.y.min);
    for (i, name) in c.x.categories.iter().enumerate() {
        let p = ctx.backend_coord(&(i as f64, y0));
        text_at(area, name, (p.0, p.1 + 6), 13, BLACK, Pos::new(HPos::Center, VPos::Top))?;
    }
    Ok(())
}

fn draw_legend(area: &DrawingArea<SVGBackend<'_>, Shift>, at: Rect, keys: &[(String, Key)]) -> Result<(), String> {
    let base = area.get_base_pixel();
    let rel = |x: i32, y: i32| (x - base.0, y - base.1);
    area.draw(&Rectangle::new([rel(at.x0, at.y0), rel(at.x1, at.y1)], WHITE.mix(0.85).filled())).map_err(err)?;
    area.draw(&Rectangle::new([rel(at.x0, at.y0), rel(at.x1, at.y1)], RGBColor(160, 160, 160).stroke_width(1))).map_err(err)?;
    for (k, (label, key)) in keys.iter().enumerate() {
        let y = at.y0 + 4 + LEGEND_ROW * k as i32 + LEGEND_ROW / 2;
        match key {
            Key::Line(col) => area.draw(&PathElement::new(vec![rel(at.x0 + 8, y), rel(at.x0 + 26, y)], col.stroke_width(2))),
            Key::Dotted(col) => area
                .draw(&PathElement::new(vec![rel(at.x0 + 8, y), rel(at.x0 + 26, y)], col.stroke_width(2)))
                .and_then(|_| area.draw(&Circle::new(rel(at.x0 + 17, y), 3, col.filled()))),
            Key::Fill(col) => area.draw(&Rectangle::new([rel(at.x0 + 9, y - 5), rel(at.x0 + 25, y + 5)], col.filled())),
        }
        .map_err(err)?;
        text_at(area, label, (at.x0 + 32, y), LEGEND_FONT, BLACK, Pos::new(HPos::Left, VPos::Center))?;
    }
    Ok(())
}

fn draw_chart(area: &DrawingArea<SVGBackend<'_>, Shift>, c: &Chart) -> Result<ChartLayout, String> {
    let (xs, ys) = (c.x.scale, c.y.scale);
    let (x0, x1) = (to_axis(xs, c.x.min), to_axis(xs, c.x.max));
    let (y0, y1) = (to_axis(ys, c.y.min), to_axis(ys, c.y.max));
    let (x1, y1) = (if x1 > x0 { x1 } else { x0 + 1.0 }, if y1 > y0 { y1 } else { y0 + 1.0 });
    let (xlo, xhi, slot) = x_extent(c, x0, x1);
    let mut labels: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).chain(c.edges.iter().map(|e| e.label.as_str())).collect();
    if !c.bands.is_empty() {
        labels.push(c.band_label.as_str());
    }
    let size = legend_size(labels);
    // A legend on the right gets a column of its own; the plot is drawn left of it.
    let right = c.legend == LegendPlace::Right;
    let (w, _) = area.dim_in_pixel();
    // At least 180 px, so that the stacked charts of a figure keep plot areas of one width.
    let column = size.0.max(180) + 24;
    let (plot_area, _) = if right { area.split_horizontally(w as i32 - column) } else { area.split_horizontally(w as i32) };
    let mut ctx = ChartBuilder::on(&plot_area)
        .caption(&c.title, ("sans-serif", 18))
        .margin(12)
        // Room for the last size tick ("8M") centred on the frame's edge.
        .margin_right(32)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(xlo..xhi, y0..y1)
        .map_err(err)?;
    // Ticks inside the axis only: the edge-bin slots are labelled by draw_edges.
    let xf = |v: &f64| if *v < x0 - 1e-9 || *v > x1 + 1e-9 { String::new() } else { tick_label(&c.x, *v) };
    let yf = |v: &f64| tick_label(&c.y, *v);
    let x_ticks = if c.x.categories.is_empty() { tick_count(&c.x) } else { 0 };
    ctx.configure_mesh()
        .x_desc(c.x.caption())
        .y_desc(c.y.caption())
        .x_labels(x_ticks)
        .y_labels(tick_count(&c.y))
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    let mut ink = Vec::new();
    let mut keys = draw_series_all(&mut ctx, c, &mut ink)?;
    keys.extend(draw_edges(area, &ctx, c, slot, &mut ink)?);
    draw_categories(area, &ctx, c)?;
    let (px, py) = ctx.plotting_area().get_pixel_range();
    let plot = Rect { x0: px.start, y0: py.start, x1: px.end, y1: py.end };
    let legend = if keys.is_empty() {
        None
    } else if right {
        Some(Rect { x0: plot.x1 + 44, y0: plot.y0, x1: plot.x1 + 44 + size.0, y1: plot.y0 + size.1 })
    } else {
        Some(legend_corner(plot, size, &ink))
    };
    if let Some(at) = legend {
        draw_legend(area, at, &keys)?;
    }
    Ok(ChartLayout { plot, legend })
}

/// The figure as an SVG document.
pub fn to_svg(f: &Figure) -> Result<String, String> {
    to_svg_with_layout(f).map(|(svg, _)| svg)
}

/// The figure as an SVG document, and where each chart's plot area and legend went.
pub fn to_svg_with_layout(f: &Figure) -> Result<(String, Vec<ChartLayout>), String> {
    let mut buf = String::new();
    let mut layout = Vec::new();
    {
        let size = figure_size(f);
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, rest) = root.split_vertically(HEADING_HEIGHT);
        top.draw(&Text::new(f.heading.as_str(), (16, 10), ("sans-serif", 22).into_font().color(&BLACK))).map_err(err)?;
        if !f.subheading.is_empty() {
            top.draw(&Text::new(f.subheading.as_str(), (16, 38), ("sans-serif", 14).into_font().color(&RGBColor(80, 80, 80))))
                .map_err(err)?;
        }
        if f.charts.is_empty() {
            rest.draw(&Text::new("no result lines to draw", (16, 20), ("sans-serif", 16))).map_err(err)?;
        }
        for (area, c) in rest.split_evenly((f.charts.len().max(1), 1)).iter().zip(&f.charts) {
            layout.push(draw_chart(area, c)?);
        }
        root.present().map_err(err)?;
    }
    Ok((buf, layout))
}

/// Text for HTML: `&`, `<`, `>` and quotes escaped.
pub fn html_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A self-contained page: the SVG inline, then each chart's data as a table, and `notes` (e.g.
/// the burn-in summary) as paragraphs. No scripts, styles inline, nothing fetched.
pub fn to_html(f: &Figure, notes: &[String]) -> Result<String, String> {
    let svg = to_svg(f)?;
    // The SVG's own XML declaration is not allowed inside HTML.
    let svg = match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => &svg[..],
    };
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    h.push_str(&format!("<title>{}</title>\n", html_escape(&f.heading)));
    h.push_str("<style>body{font-family:sans-serif;margin:16px}table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #bbb;padding:2px 8px;text-align:right}th{background:#eee}</style>\n</head>\n<body>\n");
    h.push_str(svg);
    h.push('\n');
    for n in notes {
        h.push_str(&format!("<p>{}</p>\n", html_escape(n.trim())));
    }
    for c in &f.charts {
        h.push_str(&format!("<h3>{}</h3>\n<table>\n<tr><th>series</th><th>{}</th><th>{}</th></tr>\n", html_escape(&c.title), html_escape(&c.x.caption()), html_escape(&c.y.caption())));
        for s in &c.series {
            for (x, y) in &s.points {
                let xl = match c.x.categories.get(x.round().max(0.0) as usize) {
                    Some(name) => name.clone(),
                    None if c.x.scale == Scale::Log2 => size_label(*x),
                    None => value_label(*x),
                };
                h.push_str(&format!("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(&s.name), html_escape(&xl), value_label(*y)));
            }
        }
        for e in &c.edges {
            let at = format!("{} {}", if e.above { ">" } else { "<" }, value_label(e.bound));
            h.push_str(&format!("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(&e.label), html_escape(&at), e.count));
        }
        h.push_str("</table>\n");
    }
    h.push_str("</body>\n</html>\n");
    Ok(h)
}

/// A small XML well-formedness check (tags nest and close, attributes quoted, `&` starts an
/// entity), enough to catch a broken writer; tests and `rperftest plot --check` use it.
pub fn check_xml(doc: &str) -> Result<(), String> {
    let b = doc.as_bytes();
    let mut stack: Vec<&str> = Vec::new();
    let mut i = 0;
    let mut roots = 0;
    while i < b.len() {
        match b[i] {
            b'<' => {
                let rest = &doc[i..];
                if rest.starts_with("<?") {
                    i += rest.find("?>").ok_or("unterminated <? ?>")? + 2;
                    continue;
                }
                if rest.starts_with("<!--") {
                    i += rest.find("-->").ok_or("unterminated comment")? + 3;
                    continue;
                }
                if rest.starts_with("<!") {
                    i += rest.find('>').ok_or("unterminated <!")? + 1;
                    continue;
                }
                let end = tag_end(rest).ok_or_else(|| format!("unterminated tag at byte {i}"))?;
                let tag = &rest[1..end];
                if let Some(name) = tag.strip_prefix('/') {
                    let name = name.trim();
                    match stack.pop() {
                        Some(open) if open == name => {}
                        other => return Err(format!("</{name}> closes {other:?} at byte {i}")),
                    }
                } else {
                    let self_closing = tag.ends_with('/');
                    let body = tag.trim_end_matches('/');
                    let name = body.split(|c: char| c.is_ascii_whitespace()).next().unwrap_or("");
                    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c)) {
                        return Err(format!("bad tag name {name:?} at byte {i}"));
                    }
                    check_attrs(&body[name.len()..]).map_err(|e| format!("{e} in <{name}> at byte {i}"))?;
                    if stack.is_empty() {
                        roots += 1;
                    }
                    if !self_closing {
                        stack.push(name);
                    }
                }
                i += end + 1;
            }
            b'&' => {
                let rest = &doc[i + 1..];
                let semi = rest.find(';').ok_or_else(|| format!("bare & at byte {i}"))?;
                let ent = &rest[..semi];
                let ok = matches!(ent, "amp" | "lt" | "gt" | "quot" | "apos")
                    || ent.strip_prefix("#x").is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
                    || ent.strip_prefix('#').is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
                if !ok {
                    return Err(format!("unknown entity &{ent}; at byte {i}"));
                }
                i += semi + 2;
            }
            _ => i += 1,
        }
    }
    if let Some(open) = stack.last() {
        return Err(format!("<{open}> never closed"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(())
}

/// Index of the `>` that ends the tag starting at `s[0] == '<'`, skipping quoted values.
fn tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i),
            (None, '<') => return None,
            _ => {}
        }
    }
    None
}

fn check_attrs(s: &str) -> Result<(), String> {
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let eq = rest.find('=').ok_or("attribute without a value")?;
        let name = rest[..eq].trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("bad attribute name {name:?}"));
        }
        let v = rest[eq + 1..].trim_start();
        let q = v.chars().next().ok_or("attribute without a value")?;
        if q != '"' && q != '\'' {
            return Err(format!("unquoted attribute {name}"));
        }
        let close = v[1..].find(q).ok_or("unterminated attribute value")?;
        if v[1..1 + close].contains('<') {
            return Err(format!("< in attribute {name}"));
        }
        rest = v[close + 2..].trim_start();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(title: &str) -> Figure {
        let s = Series { name: "BW average".into(), style: Style::Line, points: vec![(2.0, 1.0), (1024.0, 50.0), (8388608.0, 100.0)] };
        let x = Axis::numeric("Message size", "bytes", Scale::Log2, 2.0, 8388608.0);
        let y = Axis::numeric("Bandwidth", "MB/sec", Scale::Linear, 0.0, 110.0);
        let c = Chart { title: "Bandwidth against message size".into(), x, y, series: vec![s], bands: vec![Band { x0: 4.0, x1: 8.0 }], band_label: "drops (1)".into(), edges: vec![], legend: LegendPlace::Corner };
        Figure { heading: title.into(), subheading: "a → b".into(), charts: vec![c] }
    }

    #[test]
    fn svg_is_well_formed_with_text_labels_and_size() {
        let f = figure("RDMA Write BW on rxe0 <&>");
        let svg = to_svg(&f).unwrap();
        std::fs::write(std::env::temp_dir().join("rperftest-plot-test.svg"), &svg).ok();
        check_xml(&svg).unwrap();
        assert!(svg.contains("width=\"960\" height=\"504\""), "{}", &svg[..200]);
        // Labels are text, escaped.
        assert!(svg.contains("RDMA Write BW on rxe0 &lt;&amp;&gt;"));
        for label in ["8M", "1K", "Message size [bytes]", "Bandwidth [MB/sec]", "BW average", "drops (1)"] {
            assert!(svg.contains(&format!("\n{label}\n</text>")), "missing {label}");
        }
    }

    #[test]
    fn html_is_self_contained() {
        let h = to_html(&figure("t"), &[" Intervals: 1\n".into()]).unwrap();
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(!h.contains("<?xml"));
        assert!(!h.contains("http://") || !h.contains("src=\"http"));
        assert!(!h.contains("<script") && !h.contains("<link"));
        assert!(h.contains("<svg") && h.contains("<td>8M</td>") && h.contains("<p>Intervals: 1</p>"));
        check_xml(&h["<!DOCTYPE html>\n".len()..]).unwrap();
    }

    #[test]
    fn xml_checker_catches_breakage() {
        check_xml("<a x=\"1\"><b/>t &amp; u</a>").unwrap();
        assert!(check_xml("<a><b></a>").is_err());
        assert!(check_xml("<a>x & y</a>").is_err());
        assert!(check_xml("<a x=1></a>").is_err());
        assert!(check_xml("<a></a><b></b>").is_err());
        assert!(check_xml("<a>").is_err());
    }

    #[test]
    fn the_legend_goes_to_the_corner_with_the_least_ink() {
        let plot = Rect { x0: 0, y0: 0, x1: 400, y1: 300 };
        let ink = [Ink::Point((20, 20)), Ink::Box(Rect { x0: 380, y0: 10, x1: 390, y1: 300 })];
        let at = legend_corner(plot, (100, 40), &ink);
        assert_eq!((at.x0, at.y1), (8, 292), "lower left is the only free corner");
        assert_eq!(legend_corner(plot, (100, 40), &[]), Rect { x0: 8, y0: 8, x1: 108, y1: 48 });
        assert_eq!(legend_size(["ab", "abcd"]), (68, 44));
    }

    fn one_size_runs() -> Figure {
        use crate::run::parse_run;
        let run = |bw: f64| {
            let t = format!("{{\"test_info\":{{\"test\":\"RDMA_Write_BW\"}},\"results\":{{\"MsgSize\":65536,\"BW_peak\":{bw},\"BW_average\":{bw},\"MsgRate\":0.01}}}}");
            parse_run(&t, "r").unwrap()
        };
        crate::charts::sweep_figure(&[("before".into(), run(1020.0)), ("after".into(), run(880.0))])
    }

    #[test]
    fn one_size_runs_draw_bars_by_run_with_the_legend_beside_the_plot() {
        let (svg, layout) = to_svg_with_layout(&one_size_runs()).unwrap();
        check_xml(&svg).unwrap();
        assert_eq!(layout.len(), 2);
        for l in &layout {
            let legend = l.legend.expect("a legend");
            assert!(!legend.overlaps(&l.plot), "{legend:?} over {:?}", l.plot);
            assert!(legend.x0 > l.plot.x1 && legend.x1 <= WIDTH as i32, "{legend:?}");
            // The plot keeps most of the width.
            assert!(l.plot.x1 - l.plot.x0 > 600, "{:?}", l.plot);
        }
        assert_eq!(layout[0].plot.x1, layout[1].plot.x1, "stacked plot areas line up");
        for label in ["before · 64K", "after · 64K", "Run · message size [bytes]", "1020", "880", "BW average"] {
            assert!(svg.contains(&format!("\n{label}\n</text>")), "missing {label}");
        }
    }

    #[test]
    fn a_tail_draws_its_overflow_bin_and_a_log_cdf() {
        let f = crate::charts::figure_for(&[("t".into(), crate::charts::tests::tail_run(4))], 0.1).0;
        let (svg, layout) = to_svg_with_layout(&f).unwrap();
        check_xml(&svg).unwrap();
        let label = html_escape(&f.charts[0].edges[0].label);
        for text in [label.as_str(), "4", "Latency CDF", "100", "1000"] {
            assert!(svg.contains(&format!("\n{text}\n</text>")), "missing {text}");
        }
        assert!(svg.contains(&format!("\n&gt; {}\n</text>", value_label(f.charts[0].x.max))), "the slot's tick");
        for l in &layout {
            let legend = l.legend.expect("a legend");
            assert!(legend.x0 >= l.plot.x0 && legend.x1 <= l.plot.x1 && legend.y1 <= l.plot.y1, "inside: {legend:?} {:?}", l.plot);
        }
    }

    #[test]
    fn empty_figure_still_draws() {
        let f = Figure { heading: "x".into(), subheading: String::new(), charts: vec![] };
        check_xml(&to_svg(&f).unwrap()).unwrap();
    }
}
