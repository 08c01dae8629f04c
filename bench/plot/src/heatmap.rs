//! A heatmap: a grid of figures (node pairs of `rperftest matrix`), each cell coloured by its
//! value on a scale from the worst to the best value of the grid, flagged cells outlined, cells
//! without a figure grey with their status word. The model is plain data; [`to_svg`] draws it
//! with plotters' SVG backend like the other charts.

use plotters::prelude::*;

/// One cell: the figure (None: the pair gave none), what to write in it, and whether it is
/// flagged (LOW, FAIL, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub value: Option<f64>,
    pub text: String,
    pub flagged: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Heatmap {
    pub title: String,
    /// The figure's unit (the colour bar's caption).
    pub unit: String,
    /// Row labels (the server), then column labels (the client); the same nodes.
    pub rows: Vec<String>,
    pub cols: Vec<String>,
    /// `cells[row][col]`; None where no pair ran (the diagonal).
    pub cells: Vec<Vec<Option<Cell>>>,
    /// Bandwidth: higher is better (green); latency: lower is.
    pub higher_is_better: bool,
}

impl Heatmap {
    /// The colour scale's ends: the smallest and largest figure in the grid.
    pub fn range(&self) -> Option<(f64, f64)> {
        let vals = self.cells.iter().flatten().flatten().filter_map(|c| c.value).filter(|v| v.is_finite());
        vals.fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
    }

    /// Where `v` sits on the scale: 0 worst, 1 best (0.5 when every figure is the same).
    pub fn goodness(&self, v: f64) -> f64 {
        let Some((lo, hi)) = self.range() else { return 0.5 };
        if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
            return 0.5;
        }
        let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
        if self.higher_is_better {
            t
        } else {
            1.0 - t
        }
    }

    /// Cell size in pixels: large enough to hold its figure up to 32 nodes, then smaller (a
    /// 256-node grid is 1,024 pixels of 4-pixel cells, without text).
    pub fn cell_px(&self) -> u32 {
        let n = self.rows.len().max(self.cols.len()).max(1) as u32;
        (1024 / n).clamp(4, 64)
    }

    pub fn shows_text(&self) -> bool {
        self.cell_px() >= 40
    }
}

/// Worst (red) through yellow to best (green), readable with black text.
pub fn colour(goodness: f64) -> (u8, u8, u8) {
    let g = goodness.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64, t: f64| (a + (b - a) * t).round() as u8;
    if g < 0.5 {
        let t = g / 0.5;
        (lerp(230.0, 250.0, t), lerp(97.0, 220.0, t), lerp(80.0, 90.0, t))
    } else {
        let t = (g - 0.5) / 0.5;
        (lerp(250.0, 120.0, t), lerp(220.0, 200.0, t), lerp(90.0, 120.0, t))
    }
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing the heatmap failed: {e:?}")
}

const LEFT: u32 = 120;
const TOP: u32 = 110;
const BAR: u32 = 90;

/// The picture's size in pixels.
pub fn size(h: &Heatmap) -> (u32, u32) {
    let c = h.cell_px();
    let (w, ht) = (c * h.cols.len() as u32, c * h.rows.len() as u32);
    (LEFT + w + BAR + 40, TOP + ht + 40)
}

/// The heatmap as an SVG document.
pub fn to_svg(h: &Heatmap) -> Result<String, String> {
    let mut buf = String::new();
    {
        let dims = size(h);
        let root = SVGBackend::with_string(&mut buf, dims).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        root.draw(&Text::new(h.title.as_str(), (16, 12), ("sans-serif", 20).into_font().color(&BLACK))).map_err(err)?;
        let c = h.cell_px() as i32;
        let (x0, y0) = (LEFT as i32, TOP as i32);
        let label_font = ("sans-serif", if c >= 20 { 13 } else { 9 }).into_font().color(&BLACK);
        let every = (12 / c).max(1) as usize;
        for (i, r) in h.rows.iter().enumerate().filter(|(i, _)| i % every == 0) {
            root.draw(&Text::new(r.as_str(), (8, y0 + i as i32 * c + c / 2 - 6), label_font.clone())).map_err(err)?;
        }
        for (j, col) in h.cols.iter().enumerate().filter(|(j, _)| j % every == 0) {
            let pos = (x0 + j as i32 * c + c / 2 - 4, y0 - 8);
            root.draw(&Text::new(col.as_str(), pos, label_font.clone().transform(FontTransform::Rotate270))).map_err(err)?;
        }
        root.draw(&Text::new("server \u{2193}  client \u{2192}", (8, y0 - 24), ("sans-serif", 12).into_font().color(&RGBColor(90, 90, 90)))).map_err(err)?;
        let text_font = ("sans-serif", 12).into_font().color(&BLACK);
        for (i, row) in h.cells.iter().enumerate() {
            for (j, cell) in row.iter().enumerate() {
                let (px, py) = (x0 + j as i32 * c, y0 + i as i32 * c);
                let rect = [(px, py), (px + c, py + c)];
                match cell {
                    None => root.draw(&Rectangle::new(rect, RGBColor(245, 245, 245).filled())).map_err(err)?,
                    Some(cell) => {
                        let fill = match cell.value {
                            Some(v) => {
                                let (r, g, b) = colour(h.goodness(v));
                                RGBColor(r, g, b)
                            }
                            None => RGBColor(170, 170, 170),
                        };
                        root.draw(&Rectangle::new(rect, fill.filled())).map_err(err)?;
                        if cell.flagged {
                            let inset = [(px + 1, py + 1), (px + c - 1, py + c - 1)];
                            root.draw(&Rectangle::new(inset, RGBColor(150, 0, 0).stroke_width(if c >= 20 { 3 } else { 1 }))).map_err(err)?;
                        }
                        if h.shows_text() {
                            root.draw(&Text::new(cell.text.as_str(), (px + 4, py + c / 2 - 6), text_font.clone())).map_err(err)?;
                        }
                    }
                }
                if c >= 8 {
                    root.draw(&Rectangle::new(rect, WHITE.stroke_width(1))).map_err(err)?;
                }
            }
        }
        // The colour bar: worst at the bottom, best at the top, with the two end values.
        if let Some((lo, hi)) = h.range() {
            let bx = x0 + (c * h.cols.len() as i32) + 30;
            let bh = (c * h.rows.len() as i32).max(100);
            let steps = 50;
            for k in 0..steps {
                let g = 1.0 - k as f64 / steps as f64;
                let (r, gg, b) = colour(g);
                let y = y0 + k * bh / steps;
                root.draw(&Rectangle::new([(bx, y), (bx + 16, y + bh / steps + 1)], RGBColor(r, gg, b).filled())).map_err(err)?;
            }
            let (best, worst) = if h.higher_is_better { (hi, lo) } else { (lo, hi) };
            let small = ("sans-serif", 12).into_font().color(&BLACK);
            root.draw(&Text::new(format!("{best:.2}"), (bx + 20, y0), small.clone())).map_err(err)?;
            root.draw(&Text::new(format!("{worst:.2}"), (bx + 20, y0 + bh - 12), small.clone())).map_err(err)?;
            root.draw(&Text::new(h.unit.as_str(), (bx, y0 - 24), small)).map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(n: usize, higher: bool) -> Heatmap {
        let names: Vec<String> = (1..=n).map(|i| format!("node{i}")).collect();
        let cells = (0..n)
            .map(|i| (0..n).map(|j| (i != j).then(|| Cell { value: Some((i + j) as f64), text: format!("{}", i + j), flagged: i + j == 1 })).collect())
            .collect();
        Heatmap { title: "t".into(), unit: "MB/sec".into(), rows: names.clone(), cols: names, cells, higher_is_better: higher }
    }

    #[test]
    fn the_scale_runs_from_worst_to_best() {
        let h = grid(4, true);
        assert_eq!(h.range(), Some((1.0, 5.0)));
        assert_eq!(h.goodness(5.0), 1.0);
        assert_eq!(h.goodness(1.0), 0.0);
        let lat = grid(4, false);
        assert_eq!(lat.goodness(1.0), 1.0, "low latency is good");
        assert_eq!(colour(0.0), (230, 97, 80));
        assert_eq!(colour(1.0), (120, 200, 120));
        let mut flat = grid(2, true);
        for (r, k) in [(0, 1), (1, 0)] {
            if let Some(c) = flat.cells[r][k].as_mut() {
                c.value = Some(3.0);
            }
        }
        assert_eq!(flat.goodness(3.0), 0.5);
    }

    #[test]
    fn cells_shrink_with_the_grid_and_lose_their_text() {
        assert_eq!(grid(4, true).cell_px(), 64);
        assert!(grid(16, true).shows_text());
        assert!(!grid(64, true).shows_text());
        assert_eq!(grid(256, true).cell_px(), 4);
        assert_eq!(size(&grid(256, true)).0, LEFT + 1024 + BAR + 40);
    }

    #[test]
    fn the_svg_is_well_formed_and_holds_the_figures() {
        let svg = to_svg(&grid(4, true)).expect("svg");
        super::super::render::check_xml(&svg).expect("well-formed");
        // plotters writes each text on a line of its own.
        assert!(svg.contains("\nnode3\n") && svg.contains("\n5\n"), "labels and figures as text");
        let big = to_svg(&grid(64, true)).expect("svg");
        super::super::render::check_xml(&big).expect("well-formed");
    }
}
