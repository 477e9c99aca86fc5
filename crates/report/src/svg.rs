//! Bar charts as inline SVG: no script, no font or style from elsewhere; they
//! scale to the page's width (`viewBox`), and every bar has its figure as a
//! tooltip (`<title>`) and as `data-count` for programs reading the page.

use crate::hist::Histogram;
use crate::html::escape;
use std::fmt::Write as _;

const W: f64 = 640.0;
const H: f64 = 220.0;
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 36.0;
const TOP: f64 = 12.0;

/// A vertical line drawn over a chart at a position on its scale (in bins, so
/// 16.0 is the left edge of bin 16), with its label.
pub struct Marker {
    pub at_bin: f64,
    pub label: String,
}

/// The chart of `h`, named `name` (the `data-chart` attribute), its x axis
/// titled `x_title`.
pub fn bar_chart(name: &str, h: &Histogram, x_title: &str, marker: Option<&Marker>) -> String {
    let n = h.counts.len().max(1) as f64;
    let max = h.counts.iter().copied().max().unwrap_or(0).max(1);
    let plot_w = W - LEFT - 8.0;
    let plot_h = H - TOP - BOTTOM;
    let bw = plot_w / n;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" data-chart="{}" viewBox="0 0 {W} {H}" role="img" aria-label="{}">"#,
        escape(name),
        escape(x_title)
    );
    let _ = write!(
        s,
        r#"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{y0}" class="axis"/><line x1="{LEFT}" y1="{y0}" x2="{x1}" y2="{y0}" class="axis"/>"#,
        y0 = TOP + plot_h,
        x1 = W - 8.0
    );
    let _ = write!(
        s,
        r#"<text x="{x}" y="{y}" class="tick" text-anchor="end">{max}</text><text x="{x}" y="{y0}" class="tick" text-anchor="end">0</text>"#,
        x = LEFT - 4.0,
        y = TOP + 8.0,
        y0 = TOP + plot_h
    );
    // Labels on at most about 12 bins, so they never overlap.
    let every = (h.counts.len() / 12).max(1);
    for (i, (&c, label)) in h.counts.iter().zip(&h.labels).enumerate() {
        let x = LEFT + i as f64 * bw;
        let bh = plot_h * c as f64 / max as f64;
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{bh:.1}" class="bar" data-bin="{l}" data-count="{c}"><title>{l}: {c}</title></rect>"#,
            y = TOP + plot_h - bh,
            w = (bw - 1.0).max(0.5),
            l = escape(label)
        );
        if i % every == 0 {
            let _ = write!(
                s,
                r#"<text x="{x:.1}" y="{y:.1}" class="tick">{}</text>"#,
                escape(label),
                y = TOP + plot_h + 14.0
            );
        }
    }
    if let Some(m) = marker {
        let x = LEFT + m.at_bin * bw;
        let _ = write!(
            s,
            r#"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{y0}" class="marker"/><text x="{tx:.1}" y="{ty}" class="marker-label">{}</text>"#,
            escape(&m.label),
            y0 = TOP + plot_h,
            tx = x + 4.0,
            ty = TOP + 10.0
        );
    }
    let _ = write!(
        s,
        r#"<text x="{x}" y="{y}" class="axis-title" text-anchor="middle">{}</text></svg>"#,
        escape(x_title),
        x = LEFT + plot_w / 2.0,
        y = H - 4.0
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_carry_their_counts_and_scale_to_the_largest() {
        let mut h = Histogram::new(vec!["a".into(), "b<".into()]);
        h.counts = vec![2, 4];
        let m = Marker {
            at_bin: 1.0,
            label: "--verify 0.8".into(),
        };
        let svg = bar_chart("x", &h, "distance", Some(&m));
        assert!(svg.contains(r#"data-bin="a" data-count="2""#));
        assert!(svg.contains(r#"data-bin="b&lt;" data-count="4""#));
        // The tallest bar fills the plot's height.
        assert!(svg.contains(&format!(r#"height="{:.1}""#, H - TOP - BOTTOM)));
        assert!(svg.contains("--verify 0.8"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
