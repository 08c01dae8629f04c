//! Drawing a [`Figure`] with plotters' SVG backend (text stays `<text>` elements: no font
//! files, no C library). HTML wraps the SVGs with a data table, all inline.

use plotters::coord::Shift;
use plotters::prelude::*;

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

fn draw_chart(area: &DrawingArea<SVGBackend<'_>, Shift>, c: &Chart) -> Result<(), String> {
    let (xs, ys) = (c.x.scale, c.y.scale);
    let (x0, x1) = (to_axis(xs, c.x.min), to_axis(xs, c.x.max));
    let (y0, y1) = (to_axis(ys, c.y.min), to_axis(ys, c.y.max));
    let (x1, y1) = (if x1 > x0 { x1 } else { x0 + 1.0 }, if y1 > y0 { y1 } else { y0 + 1.0 });
    let mut ctx = ChartBuilder::on(area)
        .caption(&c.title, ("sans-serif", 18))
        .margin(12)
        // Room for the last size tick ("8M") centred on the frame's edge.
        .margin_right(32)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    let xf = |v: &f64| tick_label(&c.x, *v);
    let yf = |v: &f64| tick_label(&c.y, *v);
    ctx.configure_mesh()
        .x_desc(c.x.caption())
        .y_desc(c.y.caption())
        .x_labels(tick_count(&c.x))
        .y_labels(tick_count(&c.y))
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    let red = RGBColor(220, 40, 40);
    if !c.bands.is_empty() {
        let rects = c.bands.iter().map(|b| Rectangle::new([(to_axis(xs, b.x0), y0), (to_axis(xs, b.x1), y1)], red.mix(0.22).filled()));
        ctx.draw_series(rects)
            .map_err(err)?
            .label(c.band_label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], red.mix(0.3).filled()));
    }
    for (i, s) in c.series.iter().enumerate() {
        let col = color(i);
        let pts: Vec<(f64, f64)> = s.points.iter().map(|(x, y)| (to_axis(xs, *x), to_axis(ys, *y))).collect();
        let legend = move |(x, y): (i32, i32)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2));
        match s.style {
            Style::Line => {
                ctx.draw_series(LineSeries::new(pts.clone(), col.stroke_width(2))).map_err(err)?.label(s.name.as_str()).legend(legend);
                if pts.len() <= 64 {
                    ctx.draw_series(pts.iter().map(|p| Circle::new(*p, 3, col.filled()))).map_err(err)?;
                }
            }
            Style::Step => {
                let mut stepped = Vec::with_capacity(pts.len() * 2);
                for w in pts.windows(2) {
                    stepped.push(w[0]);
                    stepped.push((w[1].0, w[0].1));
                }
                stepped.extend(pts.last().copied());
                ctx.draw_series(LineSeries::new(stepped, col.stroke_width(2))).map_err(err)?.label(s.name.as_str()).legend(legend);
            }
            Style::Bars => {
                let half = if pts.len() > 1 { (pts[1].0 - pts[0].0) / 2.0 } else { (x1 - x0) / 40.0 };
                let bars = pts.iter().map(|(x, y)| Rectangle::new([(x - half * 0.9, y0.max(0.0)), (x + half * 0.9, *y)], col.mix(0.8).filled()));
                ctx.draw_series(bars)
                    .map_err(err)?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], col.filled()));
            }
        }
    }
    ctx.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// The figure as an SVG document.
pub fn to_svg(f: &Figure) -> Result<String, String> {
    let mut buf = String::new();
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
            draw_chart(area, c)?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
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
                let xl = if c.x.scale == Scale::Log2 { size_label(*x) } else { value_label(*x) };
                h.push_str(&format!("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(&s.name), html_escape(&xl), value_label(*y)));
            }
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
        let x = Axis { label: "Message size".into(), unit: "bytes".into(), scale: Scale::Log2, min: 2.0, max: 8388608.0 };
        let y = Axis { label: "Bandwidth".into(), unit: "MB/sec".into(), scale: Scale::Linear, min: 0.0, max: 110.0 };
        let c = Chart { title: "Bandwidth against message size".into(), x, y, series: vec![s], bands: vec![Band { x0: 4.0, x1: 8.0 }], band_label: "drops (1)".into() };
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
    fn empty_figure_still_draws() {
        let f = Figure { heading: "x".into(), subheading: String::new(), charts: vec![] };
        check_xml(&to_svg(&f).unwrap()).unwrap();
    }
}
