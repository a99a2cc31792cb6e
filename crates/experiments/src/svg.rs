//! Small SVG charts for the report, written by hand so the report is one
//! self-contained file that renders the same everywhere, offline: grouped
//! bars with error bars and reference marks, and line charts (CDFs, time
//! series).

use std::fmt::Write;

pub const PALETTE: &[&str] = &["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A "nice" axis maximum and tick step for values up to `max`.
fn nice_axis(max: f64) -> (f64, f64) {
    if !(max > 0.0) || !max.is_finite() {
        return (1.0, 0.2);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| s * 5.0 >= max).unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

fn fmt_tick(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// One bar: value with an error range.
#[derive(Clone, Debug)]
pub struct Bar {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
}

/// Grouped bars. `groups[g]` names a group; `series[s]` names a bar in each
/// group; `bars[g][s]` may be missing. `marks[g]` draws a dashed reference
/// line across group `g` (the physical floor).
pub fn bars(title: &str, y_label: &str, groups: &[String], series: &[String], bars: &[Vec<Option<Bar>>], marks: &[Option<f64>], mark_label: &str) -> String {
    let (w, h, ml, mr, mt, mb) = (760.0, 330.0, 64.0, 16.0, 34.0, 70.0);
    let pw = w - ml - mr;
    let ph = h - mt - mb;
    let max = bars.iter().flatten().flatten().map(|b| b.hi.max(b.value)).chain(marks.iter().flatten().copied()).fold(0.0, f64::max);
    let (ymax, step) = nice_axis(max * 1.05);
    let y = |v: f64| mt + ph - (v / ymax * ph).clamp(0.0, ph);
    let mut s = String::new();
    let _ = write!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{}">"#, esc(title));
    let _ = write!(s, r#"<text x="{}" y="20" class="t">{}</text>"#, ml, esc(title));
    let mut t = 0.0;
    while t <= ymax + 1e-9 {
        let _ =
            write!(s, r#"<line x1="{ml}" x2="{}" y1="{yy}" y2="{yy}" class="grid"/><text x="{}" y="{}" class="ax" text-anchor="end">{}</text>"#, w - mr, ml - 6.0, y(t) + 4.0, fmt_tick(t), yy = y(t));
        t += step;
    }
    let _ = write!(s, r#"<text transform="translate(14,{}) rotate(-90)" class="ax" text-anchor="middle">{}</text>"#, mt + ph / 2.0, esc(y_label));
    let gw = pw / groups.len().max(1) as f64;
    let bw = (gw * 0.8 / series.len().max(1) as f64).min(60.0);
    for (g, name) in groups.iter().enumerate() {
        let gx = ml + g as f64 * gw + (gw - bw * series.len() as f64) / 2.0;
        for (si, _) in series.iter().enumerate() {
            if let Some(Some(b)) = bars.get(g).and_then(|v| v.get(si)) {
                let x = gx + si as f64 * bw;
                let c = PALETTE[si % PALETTE.len()];
                let _ = write!(
                    s,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{c}" opacity="0.85"><title>{}: {}</title></rect>"#,
                    y(b.value),
                    bw - 3.0,
                    (mt + ph - y(b.value)).max(0.0),
                    esc(&series[si]),
                    fmt_tick(b.value)
                );
                let cx = x + (bw - 3.0) / 2.0;
                let _ = write!(
                    s,
                    r#"<line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}" class="err"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" class="err"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" class="err"/>"#,
                    y(b.lo),
                    y(b.hi),
                    cx - 5.0,
                    cx + 5.0,
                    y(b.lo),
                    y(b.lo),
                    cx - 5.0,
                    cx + 5.0,
                    y(b.hi),
                    y(b.hi)
                );
            }
        }
        if let Some(Some(m)) = marks.get(g) {
            let _ = write!(
                s,
                r#"<line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" class="floor"><title>{}: {}</title></line>"#,
                ml + g as f64 * gw + 4.0,
                ml + (g + 1) as f64 * gw - 4.0,
                y(*m),
                y(*m),
                esc(mark_label),
                fmt_tick(*m)
            );
        }
        let _ = write!(s, r#"<text x="{:.1}" y="{}" class="ax" text-anchor="middle">{}</text>"#, ml + g as f64 * gw + gw / 2.0, mt + ph + 18.0, esc(name));
    }
    legend(&mut s, series, ml, h - 26.0, marks.iter().any(|m| m.is_some()).then_some(mark_label));
    s.push_str("</svg>");
    s
}

fn legend(s: &mut String, series: &[String], x0: f64, y0: f64, mark: Option<&str>) {
    let mut x = x0;
    for (i, name) in series.iter().enumerate() {
        let _ =
            write!(s, r#"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{:.1}" class="ax">{}</text>"#, y0 - 10.0, PALETTE[i % PALETTE.len()], x + 16.0, y0, esc(name));
        x += 28.0 + 7.0 * name.len() as f64;
    }
    if let Some(m) = mark {
        let _ = write!(s, r#"<line x1="{x:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" class="floor"/><text x="{:.1}" y="{y0:.1}" class="ax">{}</text>"#, x + 18.0, y0 - 4.0, y0 - 4.0, x + 22.0, esc(m));
    }
}

/// A chart's frame: its size and margins, and both axes' maxima and steps.
struct Frame {
    w: f64,
    h: f64,
    ml: f64,
    mr: f64,
    mt: f64,
    mb: f64,
    x: (f64, f64),
    y: (f64, f64),
}

impl Frame {
    /// `(w, h, ml, mr, mt, mb)`, and the largest x and y to show.
    fn new((w, h, ml, mr, mt, mb): (f64, f64, f64, f64, f64, f64), xmax: f64, ymax: f64) -> Frame {
        Frame { w, h, ml, mr, mt, mb, x: nice_axis(xmax), y: nice_axis(ymax) }
    }
    fn pw(&self) -> f64 {
        self.w - self.ml - self.mr
    }
    fn ph(&self) -> f64 {
        self.h - self.mt - self.mb
    }
    fn fx(&self, v: f64) -> f64 {
        self.ml + (v / self.x.0 * self.pw()).clamp(0.0, self.pw())
    }
    fn fy(&self, v: f64) -> f64 {
        self.mt + self.ph() - (v / self.y.0 * self.ph()).clamp(0.0, self.ph())
    }

    /// The SVG's start (with `style`, for a file on its own): title, grid,
    /// ticks and axis labels.
    fn open(&self, title: &str, x_label: &str, y_label: &str, style: &str) -> String {
        let (w, h, ml, mt, ph) = (self.w, self.h, self.ml, self.mt, self.ph());
        let mut s = String::new();
        let _ = write!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{}">{style}"#, esc(title));
        let _ = write!(s, r#"<text x="{ml}" y="18" class="t">{}</text>"#, esc(title));
        let mut t = 0.0;
        while t <= self.y.0 + 1e-9 {
            let yy = self.fy(t);
            let _ = write!(
                s,
                r#"<line x1="{ml}" x2="{}" y1="{yy:.1}" y2="{yy:.1}" class="grid"/><text x="{}" y="{:.1}" class="ax" text-anchor="end">{}</text>"#,
                w - self.mr,
                ml - 5.0,
                yy + 4.0,
                fmt_tick(t)
            );
            t += self.y.1;
        }
        let mut t = 0.0;
        while t <= self.x.0 + 1e-9 {
            let _ = write!(s, r#"<text x="{:.1}" y="{}" class="ax" text-anchor="middle">{}</text>"#, self.fx(t), mt + ph + 15.0, fmt_tick(t));
            t += self.x.1;
        }
        let _ = write!(s, r#"<text x="{}" y="{}" class="ax" text-anchor="middle">{}</text>"#, ml + self.pw() / 2.0, mt + ph + 30.0, esc(x_label));
        let _ = write!(s, r#"<text transform="translate(12,{}) rotate(-90)" class="ax" text-anchor="middle">{}</text>"#, mt + ph / 2.0, esc(y_label));
        s
    }
}

/// Lines: `series[i]` is a name and its points `(x, y)`.
pub fn lines(title: &str, x_label: &str, y_label: &str, series: &[(String, Vec<(f64, f64)>)], step: bool) -> String {
    lines_with(title, x_label, y_label, series, step, None, false)
}

/// [`lines`] with the x axis reaching at least `x_max` (so charts side by
/// side share a scale), and with `points` each value as a dot rather than
/// joined (for a handful of runs, where a staircase would mislead).
pub fn lines_with(title: &str, x_label: &str, y_label: &str, series: &[(String, Vec<(f64, f64)>)], step: bool, x_max: Option<f64>, points: bool) -> String {
    let (w, h, ml, mr, mt, mb) = (370.0, 260.0, 56.0, 12.0, 30.0, 64.0);
    let xmax = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(x_max.unwrap_or(0.0), f64::max);
    let ymax = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(0.0, f64::max);
    let f = Frame::new((w, h, ml, mr, mt, mb), xmax, ymax);
    let (fx, fy) = (|v| f.fx(v), |v| f.fy(v));
    let mut s = f.open(title, x_label, y_label, "");
    for (i, (name, pts)) in series.iter().enumerate() {
        if pts.is_empty() {
            continue;
        }
        if points {
            for (x, yv) in pts {
                let _ = write!(s, r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{}"><title>{}</title></circle>"#, fx(*x), fy(*yv), PALETTE[i % PALETTE.len()], esc(name));
            }
            continue;
        }
        let mut d = String::new();
        for (k, (x, yv)) in pts.iter().enumerate() {
            if k == 0 {
                let _ = write!(d, "M{:.1},{:.1}", fx(*x), fy(*yv));
            } else {
                if step {
                    let _ = write!(d, " L{:.1},{:.1}", fx(*x), fy(pts[k - 1].1));
                }
                let _ = write!(d, " L{:.1},{:.1}", fx(*x), fy(*yv));
            }
        }
        let _ = write!(s, r#"<path d="{d}" fill="none" stroke="{}" stroke-width="2"><title>{}</title></path>"#, PALETTE[i % PALETTE.len()], esc(name));
    }
    let names: Vec<String> = series.iter().map(|s| s.0.clone()).collect();
    legend(&mut s, &names, ml, h - 10.0, None);
    s.push_str("</svg>");
    s
}

/// One object of a page load, for [`waterfall`]: when it was asked for,
/// its first and last byte (s since the load began), which connection
/// carried it, whether the server pushed it.
pub struct Span {
    pub label: String,
    pub start: f64,
    pub first_byte: f64,
    pub end: f64,
    pub conn: usize,
    pub pushed: bool,
}

/// A waterfall: one row per object in request order — a light bar while
/// waiting for the first byte, a dark one while receiving, coloured by
/// connection; pushed objects hatched. `x_max` puts charts side by side on
/// one scale.
pub fn waterfall(title: &str, subtitle: &str, spans: &[Span], x_max: f64) -> String {
    let row = 9.0;
    let (w, ml, mr, mt, mb) = (370.0, 120.0, 12.0, 44.0, 34.0);
    let h = mt + mb + row * spans.len().max(1) as f64;
    let pw = w - ml - mr;
    let xmax = spans.iter().map(|s| s.end).fold(x_max, f64::max);
    let (xm, xs) = nice_axis(xmax);
    let fx = |v: f64| ml + (v / xm * pw).clamp(0.0, pw);
    let mut s = String::new();
    let _ = write!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{}">"#, esc(title));
    let _ = write!(s, r#"<text x="8" y="18" class="t">{}</text><text x="8" y="33" class="ax">{}</text>"#, esc(title), esc(subtitle));
    let mut t = 0.0;
    while t <= xm + 1e-9 {
        let _ = write!(
            s,
            r#"<line x1="{x:.1}" x2="{x:.1}" y1="{mt}" y2="{}" class="grid"/><text x="{x:.1}" y="{}" class="ax" text-anchor="middle">{}</text>"#,
            h - mb,
            h - mb + 14.0,
            fmt_tick(t),
            x = fx(t)
        );
        t += xs;
    }
    let _ = write!(s, r#"<text x="{}" y="{}" class="ax" text-anchor="middle">s since the load began; light: waiting, dark: receiving</text>"#, ml + pw / 2.0, h - 6.0);
    for (i, sp) in spans.iter().enumerate() {
        let y = mt + row * i as f64;
        let colour = PALETTE[sp.conn % PALETTE.len()];
        let label: String = sp.label.chars().rev().take(22).collect::<Vec<_>>().into_iter().rev().collect();
        let _ = write!(s, r#"<text x="{}" y="{:.1}" class="ax" text-anchor="end" style="font-size:8px">{}</text>"#, ml - 4.0, y + row - 1.5, esc(&label));
        let tip = format!("{}: asked {:.3} s, first byte {:.3} s, done {:.3} s, connection {}{}", sp.label, sp.start, sp.first_byte, sp.end, sp.conn, if sp.pushed { ", pushed" } else { "" });
        let _ = write!(
            s,
            r#"<g><title>{}</title><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{colour}" opacity="0.3"/><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{colour}"{}/></g>"#,
            esc(&tip),
            fx(sp.start),
            y + 1.0,
            (fx(sp.first_byte) - fx(sp.start)).max(0.5),
            row - 2.0,
            fx(sp.first_byte),
            y + 1.0,
            (fx(sp.end) - fx(sp.first_byte)).max(1.0),
            row - 2.0,
            if sp.pushed { r##" stroke="#000" stroke-dasharray="2 1""## } else { "" }
        );
    }
    s.push_str("</svg>");
    s
}

/// The report's chart styles, for an SVG saved on its own.
pub const STANDALONE_STYLE: &str = "<style>svg{background:#fff;font-family:sans-serif}.t{font-size:14px;font-weight:600}.ax{font-size:11px;fill:#333}.grid{stroke:#e6e6e6}.band{fill:#d62728;fill-opacity:.25}.mark{stroke:#555;stroke-dasharray:2 3}</style>";

/// A [`timeline`]'s width and height.
pub const TIMELINE_SIZE: (f64, f64) = (900.0, 300.0);

/// [`timeline`]s one above another in one standalone SVG (the same time
/// axis: a route's delay, loss and rate).
pub fn stack(charts: &[String]) -> String {
    if let [one] = charts {
        return one.clone();
    }
    let (w, h) = TIMELINE_SIZE;
    let total = h * charts.len() as f64;
    let mut s = format!(r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {total}" width="{w}" height="{total}">"#);
    for (i, c) in charts.iter().enumerate() {
        s.push_str(&c.replacen("<svg ", &format!(r#"<svg y="{}" "#, h * i as f64), 1));
    }
    s.push_str("</svg>");
    s
}

/// A time series with gaps (`None`: no value), shaded `bands` (from, to:
/// outages) and dotted `marks` (events, their labels as tooltips), wide
/// enough for hours of samples. Standalone: it carries its own styles.
pub fn timeline(title: &str, x_label: &str, y_label: &str, pts: &[(f64, Option<f64>)], bands: &[(f64, f64)], marks: &[(f64, String)]) -> String {
    let f = Frame::new((TIMELINE_SIZE.0, TIMELINE_SIZE.1, 56.0, 16.0, 30.0, 46.0), pts.last().map_or(0.0, |p| p.0), pts.iter().filter_map(|p| p.1).fold(0.0, f64::max));
    let (fx, fy, mt, ph) = (|v| f.fx(v), |v| f.fy(v), f.mt, f.ph());
    let mut s = f.open(title, x_label, y_label, STANDALONE_STYLE);
    for &(a, b) in bands {
        let _ = write!(s, r#"<rect x="{:.1}" y="{mt}" width="{:.1}" height="{ph}" class="band"/>"#, fx(a), (fx(b) - fx(a)).max(1.0));
    }
    for (x, label) in marks {
        let _ = write!(s, r#"<line x1="{x:.1}" x2="{x:.1}" y1="{mt}" y2="{}" class="mark"><title>{}</title></line>"#, mt + ph, esc(label), x = fx(*x));
    }
    let mut d = String::new();
    let mut pen_up = true;
    for (x, y) in pts {
        match y {
            Some(y) => {
                let _ = write!(d, "{}{:.1},{:.1} ", if pen_up { "M" } else { "L" }, fx(*x), fy(*y));
                pen_up = false;
            }
            None => pen_up = true,
        }
    }
    let _ = write!(s, r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.6"/></svg>"#, PALETTE[0]);
    s
}

/// A flight's track on a plain longitude–latitude map (equirectangular,
/// the track's own box and a margin): the track (`served`: in service,
/// drawn solid; out of it, red), ground `sites` as dots with their names as
/// tooltips, and `marks` (handovers) as rings. Longitudes are unwrapped
/// along the track, so a flight across 180° stays one line.
pub fn map(title: &str, track: &[(f64, f64, bool)], sites: &[(f64, f64, String)], marks: &[(f64, f64, String)]) -> String {
    let (w, h, m, top) = (900.0, 520.0, 40.0, 30.0);
    // Unwrap the track's longitudes; put each site and mark nearest to it.
    let mut lons: Vec<f64> = Vec::with_capacity(track.len());
    for &(lon, _, _) in track {
        let l = match lons.last() {
            Some(&p) => lon + 360.0 * ((p - lon) / 360.0).round(),
            None => lon,
        };
        lons.push(l);
    }
    let mid = lons.iter().sum::<f64>() / lons.len().max(1) as f64;
    let near = |lon: f64| lon + 360.0 * ((mid - lon) / 360.0).round();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (i, &(_, lat, _)) in track.iter().enumerate() {
        (x0, x1, y0, y1) = (x0.min(lons[i]), x1.max(lons[i]), y0.min(lat), y1.max(lat));
    }
    let pad = ((x1 - x0).max(y1 - y0) * 0.08).max(1.0);
    (x0, x1, y0, y1) = (x0 - pad, x1 + pad, y0 - pad, y1 + pad);
    // One scale for both axes (degrees as they are: no projection).
    let k = ((w - 2.0 * m) / (x1 - x0)).min((h - top - m) / (y1 - y0));
    let fx = |lon: f64| m + (lon - x0) * k;
    let fy = |lat: f64| top + (y1 - lat) * k;
    let inside = |lon: f64, lat: f64| (x0..=x1).contains(&lon) && (y0..=y1).contains(&lat);
    let mut s = format!(r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{}">{STANDALONE_STYLE}"#, esc(title));
    let _ = write!(s, r#"<text x="{m}" y="18" class="t">{}</text>"#, esc(title));
    // Longitudes as people write them (−180° to 180°).
    let deg = |lon: f64| (lon + 180.0).rem_euclid(360.0) - 180.0;
    let _ = write!(
        s,
        r#"<text x="{m}" y="{}" class="ax">longitude {:.0}° to {:.0}° (west to east), latitude {:.0}° to {:.0}°; red: no service; dots: ground sites; rings: handovers</text>"#,
        h - 12.0,
        deg(x0),
        deg(x1),
        y0,
        y1
    );
    for (lon, lat, name) in sites {
        let lon = near(*lon);
        if inside(lon, *lat) {
            let _ = write!(s, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"><title>{}</title></circle>"#, fx(lon), fy(*lat), PALETTE[2], esc(name));
        }
    }
    for (i, pair) in track.windows(2).enumerate() {
        let colour = if pair[0].2 && pair[1].2 { PALETTE[0] } else { PALETTE[1] };
        let _ = write!(s, r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2"/>"#, fx(lons[i]), fy(pair[0].1), fx(lons[i + 1]), fy(pair[1].1));
    }
    for (lon, lat, label) in marks {
        let _ = write!(s, r##"<circle cx="{:.1}" cy="{:.1}" r="5" fill="none" stroke="#555"><title>{}</title></circle>"##, fx(near(*lon)), fy(*lat), esc(label));
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    /// Stacked timelines share one root, each placed below the last; one
    /// chart stays as it is.
    #[test]
    fn stacked_timelines_sit_one_below_another() {
        let chart = |t: &str| super::timeline(t, "h", "ms", &[(0.0, Some(1.0)), (1.0, None), (2.0, Some(3.0))], &[(0.5, 1.5)], &[(1.0, "event".into())]);
        let (a, b) = (chart("delay"), chart("loss"));
        assert_eq!(super::stack(std::slice::from_ref(&a)), a);
        let s = super::stack(&[a, b]);
        assert!(s.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 900 600" width="900" height="600">"#), "{}", &s[..120]);
        assert_eq!(s.matches("<svg ").count(), 3);
        assert!(s.contains(r#"<svg y="0" xmlns"#) && s.contains(r#"<svg y="300" xmlns"#));
        assert!(s.ends_with("</svg></svg>"));
    }

    /// A track across 180° stays one line on the map (no segment jumps the
    /// width of the chart); sites far off the track are left out.
    #[test]
    fn a_map_unwraps_a_track_across_the_antimeridian() {
        let track = [(170.0, 30.0, true), (179.0, 31.0, true), (-178.0, 32.0, false), (-170.0, 33.0, true)];
        let sites = [(-175.0, 31.5, "near".to_string()), (0.0, 0.0, "far".to_string())];
        let s = super::map("t", &track, &sites, &[(179.0, 31.0, "handover".into())]);
        let xs: Vec<f64> = s.split("<line ").skip(1).flat_map(|l| ["x1=\"", "x2=\""].map(|k| l.split(k).nth(1).unwrap().split('"').next().unwrap().parse::<f64>().unwrap())).collect();
        assert_eq!(xs.len(), 6, "three segments");
        assert!(xs.windows(2).all(|p| (p[1] - p[0]).abs() < 450.0), "{xs:?}");
        assert!(s.contains("<title>near</title>") && !s.contains("<title>far</title>"));
        assert_eq!(s.matches("#d62728").count() - 1, 2, "two segments out of service (one style line names the colour)");
    }
}
