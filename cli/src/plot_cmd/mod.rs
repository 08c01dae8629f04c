//! `rperftest plot` (overlay runs on one chart, SVG or self-contained HTML) and
//! `rperftest compare` (base against new with a tolerance; exit 1 on a regression).
//! The run files are `--out_json` reports or `--series` files; docs/plots.md has the formats.

pub mod compare;

use plot::{burnin, charts, render, run};
use clap::{Arg, ArgAction, Command};

const COMPARE_AFTER: &str = "\
Each FILE is an --out_json report (one size) or a --series file (every size of a -a sweep).
Several files per side: each figure is the median over them, and the table shows the spread
(±half of max-min). One run per side measures noise as much as change: for a gate use at
least 3 runs per side, so one disturbed run moves the median by nothing.
Exit status: 0 no regression, 1 a regression beyond the tolerance, 2 bad input.";

const PLOT_AFTER: &str = "\
Each RUN is an --out_json report or a --series file (ib_* --series FILE). Runs that are all
periodic (--run_infinitely) are drawn against time, with every interval more than --drop
below the running median shaded; one -H run with samples is drawn as histogram and CDF
(a run with a tail: the histogram over the body, the samples beyond counted at its edge,
the CDF on a log axis); runs of one size each side by side (a bar per figure and run);
anything else against message size. OUT ending in .html is a self-contained page (inline
SVG and the data as tables).";

fn plot_command() -> Command {
    Command::new("rperftest plot")
        .about("Draw one or more runs on one chart (SVG or self-contained HTML)")
        .after_help(PLOT_AFTER)
        .arg(Arg::new("runs").value_name("RUN.json").num_args(1..).required(true).help("run files, drawn in order"))
        .arg(Arg::new("out").short('o').long("out").value_name("OUT.svg|OUT.html").required(true).help("the picture to write"))
        .arg(Arg::new("label").long("label").value_name("L").action(ArgAction::Append).help("legend label of each run, in order (default: the file name)"))
        .arg(Arg::new("drop").long("drop").value_name("PCT").default_value("10%").help("burn-in: mark intervals this far below the running median"))
        .arg(Arg::new("json").long("json").action(ArgAction::SetTrue).help("print what was drawn as JSON"))
}

fn compare_command() -> Command {
    Command::new("rperftest compare")
        .about("Compare runs per size and figure; exit 1 when NEW regressed beyond the tolerance")
        .after_help(COMPARE_AFTER)
        .arg(Arg::new("base").value_name("BASE.json").required(true).help("baseline run file (more with --base)"))
        .arg(Arg::new("new").value_name("NEW.json").required(true).help("new run file (more with --new)"))
        .arg(Arg::new("more-base").long("base").value_name("FILE").action(ArgAction::Append).help("another baseline run"))
        .arg(Arg::new("more-new").long("new").value_name("FILE").action(ArgAction::Append).help("another new run"))
        .arg(Arg::new("tolerance").long("tolerance").value_name("PCT").default_value("5%").help("how much worse new may be"))
        .arg(Arg::new("json").long("json").action(ArgAction::SetTrue).help("print the comparison as JSON"))
}

fn read_run(path: &str) -> Result<run::RunData, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read it: {e}"))?;
    run::parse_run(&text, path)
}

fn file_label(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    base.split('.').next().filter(|s| !s.is_empty()).unwrap_or(base).to_string()
}

fn fail(msg: &str) -> u8 {
    eprintln!("rperftest: {msg}");
    2
}

pub fn run_plot(args: &[String]) -> u8 {
    let m = match cli_args::parse_std(plot_command(), "rperftest plot", args) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let files: Vec<String> = m.get_many::<String>("runs").map(|v| v.cloned().collect()).unwrap_or_default();
    let labels: Vec<String> = m.get_many::<String>("label").map(|v| v.cloned().collect()).unwrap_or_default();
    let out: &String = m.get_one("out").expect("required");
    if labels.len() > files.len() {
        return fail(&format!("{} --label values for {} runs: give at most one per run", labels.len(), files.len()));
    }
    let drop = match burnin::parse_percent(m.get_one::<String>("drop").map_or("10%", String::as_str), "--drop") {
        Ok(d) => d,
        Err(e) => return fail(&e),
    };
    let html = match out.rsplit('.').next().map(str::to_ascii_lowercase).as_deref() {
        Some("svg") => false,
        Some("html" | "htm") => true,
        _ => return fail(&format!("-o {out}: name it .svg or .html (that decides what is written)")),
    };
    let mut runs = Vec::new();
    for (i, f) in files.iter().enumerate() {
        match read_run(f) {
            Ok(r) if r.points.is_empty() => return fail(&format!("{f}: the run has no result line")),
            Ok(r) => runs.push((labels.get(i).cloned().unwrap_or_else(|| file_label(f)), r)),
            Err(e) => return fail(&e),
        }
    }
    let (fig, marked) = charts::figure_for(&runs, drop);
    let mut notes = Vec::new();
    if let Some(mk) = &marked {
        for ((label, idx), (_, r)) in mk.iter().zip(&runs) {
            notes.push(format!("{label}:{}", burnin::drop_summary(idx.len(), r.points.len(), drop).trim_end()));
        }
    }
    let doc = if html { render::to_html(&fig, &notes) } else { render::to_svg(&fig) };
    let doc = match doc {
        Ok(d) => d,
        Err(e) => return fail(&e),
    };
    // Our own writer checked before the file exists: a broken picture is a bug, said here.
    let xml = if html { doc.split_once('\n').map_or("", |x| x.1) } else { doc.as_str() };
    if let Err(e) = render::check_xml(xml) {
        return fail(&format!("internal error: the drawing is not well-formed XML ({e})"));
    }
    if let Err(e) = std::fs::write(out, &doc) {
        return fail(&format!("-o {out}: cannot write it: {e}"));
    }
    let kind = if marked.is_some() {
        "time series"
    } else if fig.charts.iter().any(|c| !c.x.categories.is_empty()) {
        "side by side"
    } else if fig.charts.len() == 2 && !runs[0].1.is_bw() {
        "histogram"
    } else {
        "sweep"
    };
    if m.get_flag("json") {
        let (w, h) = render::figure_size(&fig);
        let j = serde_json::json!({
            "out": out,
            "kind": kind,
            "width": w,
            "height": h,
            "heading": fig.heading,
            "charts": fig.charts.iter().map(|c| serde_json::json!({
                "title": c.title,
                "x": {"caption": c.x.caption(), "scale": format!("{:?}", c.x.scale), "min": c.x.min, "max": c.x.max, "categories": c.x.categories},
                "y": {"caption": c.y.caption(), "scale": format!("{:?}", c.y.scale), "min": c.y.min, "max": c.y.max},
                "series": c.series.iter().map(|s| serde_json::json!({"name": s.name, "points": s.points})).collect::<Vec<_>>(),
                "edges": c.edges.iter().map(|e| serde_json::json!({"above": e.above, "bound": e.bound, "count": e.count, "label": e.label})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "drop": drop,
            "marked": marked.as_ref().map(|mk| mk.iter().map(|(l, i)| serde_json::json!({"label": l, "intervals": i})).collect::<Vec<_>>()),
        });
        println!("{j:#}");
    } else {
        println!(" Wrote {out}: {kind} of {} run{}", runs.len(), if runs.len() == 1 { "" } else { "s" });
        for n in &notes {
            println!(" {n}");
        }
    }
    0
}

pub fn run_compare(args: &[String]) -> u8 {
    let m = match cli_args::parse_std(compare_command(), "rperftest compare", args) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let list = |first: &str, more: &str| -> Vec<String> {
        let mut v: Vec<String> = m.get_one::<String>(first).cloned().into_iter().collect();
        v.extend(m.get_many::<String>(more).map(|x| x.cloned().collect::<Vec<_>>()).unwrap_or_default());
        v
    };
    let (base_files, new_files) = (list("base", "more-base"), list("new", "more-new"));
    let tol = match burnin::parse_percent(m.get_one::<String>("tolerance").map_or("5%", String::as_str), "--tolerance") {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    let read = |files: &[String]| -> Result<Vec<run::RunData>, String> { files.iter().map(|f| read_run(f)).collect() };
    let (base, new) = match (read(&base_files), read(&new_files)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => return fail(&e),
    };
    let rows = match compare::compare(&base, &new, tol) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    if m.get_flag("json") {
        println!("{:#}", compare::to_json(&rows, tol, &base_files, &new_files));
    } else {
        let test = base.first().map(|r| r.meta.test.clone()).unwrap_or_default();
        let other = new.iter().find(|r| r.meta.test != test).map(|r| r.meta.test.clone());
        println!(" compare {test}: base {} run(s), new {} run(s), tolerance {}%", base.len(), new.len(), plot::model::value_label(tol * 100.0));
        if let Some(o) = other {
            println!(" note: the new side includes {o}, not {test}");
        }
        if base.len().min(new.len()) < 3 {
            println!(" note: fewer than 3 runs on a side: one noisy run can decide (see --help)");
        }
        print!("{}", compare::table(&rows, tol));
    }
    u8::from(rows.iter().any(|r| r.regression))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str, text: &str) -> String {
        let p = std::env::temp_dir().join(format!("rperftest-plotcmd-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn report(bw: f64) -> String {
        format!("{{\"test_info\":{{\"test\":\"RDMA_Write_BW\",\"Device\":\"rxe0\"}},\"results\":{{\"MsgSize\":65536,\"n_iterations\":5000,\"BW_peak\":{bw},\"BW_average\":{bw},\"MsgRate\":{}}}}}", bw / 65536.0)
    }

    #[test]
    fn compare_exit_codes() {
        let a = tmp("a.json", &report(1000.0));
        let b = tmp("b.json", &report(980.0));
        let c = tmp("c.json", &report(500.0));
        assert_eq!(run_compare(&[a.clone(), b.clone()]), 0);
        assert_eq!(run_compare(&[a.clone(), c.clone()]), 1);
        assert_eq!(run_compare(&[a.clone(), c.clone(), "--tolerance".into(), "60%".into()]), 0);
        assert_eq!(run_compare(&[a.clone(), c.clone(), "--json".into()]), 1);
        assert_eq!(run_compare(&[a.clone(), c.clone(), "--new".into(), b.clone(), "--new".into(), a.clone()]), 0, "median of 500, 980, 1000");
        assert_eq!(run_compare(&[a.clone(), "/nonexistent/x.json".into()]), 2);
        assert_eq!(run_compare(&[a.clone(), b.clone(), "--tolerance".into(), "lots".into()]), 2);
        assert_eq!(run_compare(std::slice::from_ref(&a)), 2);
        for f in [a, b, c] {
            std::fs::remove_file(f).ok();
        }
    }

    #[test]
    fn plot_writes_svg_and_html_and_refuses_bad_names() {
        let a = tmp("p.json", &report(1000.0));
        let svg = std::env::temp_dir().join(format!("rperftest-plotcmd-{}.svg", std::process::id()));
        let html = svg.with_extension("html");
        let s = svg.to_string_lossy().into_owned();
        let h = html.to_string_lossy().into_owned();
        assert_eq!(run_plot(&[a.clone(), "-o".into(), s.clone(), "--label".into(), "base".into()]), 0);
        let text = std::fs::read_to_string(&svg).unwrap();
        render::check_xml(&text).unwrap();
        assert!(text.contains("\nBW average\n"));
        assert_eq!(run_plot(&[a.clone(), a.clone(), "-o".into(), h.clone()]), 0);
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"));
        assert_eq!(run_plot(&[a.clone(), "-o".into(), "x.png".into()]), 2);
        assert_eq!(run_plot(&[a.clone(), "-o".into(), s.clone(), "--label".into(), "1".into(), "--label".into(), "2".into()]), 2);
        assert_eq!(run_plot(&[a.clone(), "-o".into(), s.clone(), "--drop".into(), "x".into()]), 2);
        for f in [a, s, h] {
            std::fs::remove_file(f).ok();
        }
    }

    #[test]
    fn one_size_runs_and_a_tail_run_draw_their_new_charts() {
        let fix = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/plots/");
        let svg = std::env::temp_dir().join(format!("rperftest-plotcmd-{}-new.svg", std::process::id()));
        let s = svg.to_string_lossy().into_owned();
        assert_eq!(run_plot(&[format!("{fix}b1.json"), format!("{fix}b2.json"), "-o".into(), s.clone()]), 0);
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("\nb1 · 64K\n</text>") && text.contains("\nBandwidth per run\n</text>"));
        assert_eq!(run_plot(&[format!("{fix}lat-tail.jsonl"), "-o".into(), s.clone()]), 0);
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("\n&gt; 44.54 usec: 4 samples (max 12211)\n</text>"), "the overflow bin's label");
        // The CDF's log axis has a tick at 100, which no linear 38..12211 axis has.
        assert!(text.contains("\nLatency CDF\n</text>") && text.contains("\n100\n</text>"));
        std::fs::remove_file(svg).ok();
    }

    #[test]
    fn labels_default_to_the_file_stem() {
        assert_eq!(file_label("/tmp/base.json"), "base");
        assert_eq!(file_label("run1.series.jsonl"), "run1");
    }
}
