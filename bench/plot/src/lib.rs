//! Charts for the whole project: the model ([`model`]: series, axes, scales, units, labels),
//! figures built from runs ([`charts`]), run files ([`run`]), burn-in drops ([`burnin`]) and
//! drawing with plotters' SVG backend ([`render`]). docs/plots.md describes what is drawn.

pub mod burnin;
pub mod charts;
pub mod heatmap;
pub mod latency;
pub mod model;
pub mod render;
pub mod run;
