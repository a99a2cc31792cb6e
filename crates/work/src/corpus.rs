//! The page corpus: eight multi-origin pages whose shape follows published
//! web statistics, generated deterministically (the same name always gives
//! the same bytes), served by the workload server and `aerolink replay`.
//!
//! Provenance. `median` follows the HTTP Archive Web Almanac 2024 (Page
//! Weight chapter, October 2024 crawl) median desktop home page: 2,652 KB
//! in 71 requests; images 1,054 KB in 18 requests, JavaScript 613 KB in
//! 24, fonts 131 KB, CSS 78 KB, HTML 18 KB. `mobile` is the median mobile
//! page (2,311 KB, 66 requests) with the same mix. `heavy` is the Almanac
//! 2020's 90th percentile desktop page (7.4 MB). Request counts the chapter
//! does not give (CSS, fonts), the rest of the bytes ("other": JSON,
//! beacons, media), the number of origins and the other five pages are our
//! choice, stated in [`SHAPES`].
//!
//! Every page has a first-party origin `www.NAME.test` (the HTML and the
//! hero image), `static.NAME.test` (CSS, first-party scripts, fonts),
//! `img.NAME.test` (images) and third parties `tK.NAME.test`, each with an
//! asynchronous script that fetches its beacons and JSON — a real page's
//! dependency chain: HTML → CSS → fonts and background images, HTML →
//! scripts → what they fetch. `spa` renders everything from script after
//! fetching its data. Images are real PNGs (a colored pattern, padded to
//! size with a private ancillary chunk), so they paint and count for the
//! largest contentful paint.

use std::fmt::Write as _;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::archive::{Archive, Entry, FORMAT};
use crate::page::png;

/// A page's shape: bytes and requests by type, and its origins.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub name: &'static str,
    pub what: &'static str,
    pub html_kb: u32,
    /// (requests, KB) of each type.
    pub css: (u32, u32),
    /// First-party scripts (render-blocking, then deferred).
    pub js: (u32, u32),
    /// Third-party scripts, one per third-party origin.
    pub js_3p: (u32, u32),
    pub img: (u32, u32),
    pub font: (u32, u32),
    /// JSON and beacons fetched by the third-party scripts (or, for a
    /// single-page app, by the app).
    pub other: (u32, u32),
    /// Whether the page is rendered by script (a single-page app).
    pub spa: bool,
}

impl Shape {
    pub fn requests(&self) -> u32 {
        1 + self.css.0 + self.js.0 + self.js_3p.0 + self.img.0 + self.font.0 + self.other.0
    }
    pub fn kilobytes(&self) -> u32 {
        self.html_kb + self.css.1 + self.js.1 + self.js_3p.1 + self.img.1 + self.font.1 + self.other.1
    }
    /// www, static, img and one per third party.
    pub fn origins(&self) -> u32 {
        3 + self.js_3p.0
    }
}

/// The corpus. JS is split between first-party (bundles) and third-party
/// scripts; each third party is one origin.
pub const SHAPES: &[Shape] = &[
    Shape { name: "median", what: "HTTP Archive 2024 median desktop page (2,652 KB, 71 requests; 18 images 1,054 KB, 24 scripts 613 KB, fonts 131 KB, CSS 78 KB, HTML 18 KB); 6 CSS, 4 fonts, 18 other requests (758 KB), 14 third parties: our choice", html_kb: 18, css: (6, 78), js: (10, 380), js_3p: (14, 233), img: (18, 1054), font: (4, 131), other: (18, 758), spa: false },
    Shape { name: "mobile", what: "HTTP Archive 2024 median mobile page (2,311 KB, 66 requests), the desktop mix scaled", html_kb: 16, css: (5, 68), js: (9, 331), js_3p: (13, 203), img: (17, 918), font: (4, 114), other: (17, 661), spa: false },
    Shape { name: "heavy", what: "HTTP Archive 2020 90th-percentile desktop page (7.4 MB); 180 requests, 40 third parties: our choice", html_kb: 120, css: (12, 300), js: (20, 1600), js_3p: (40, 900), img: (60, 3700), font: (8, 350), other: (39, 430), spa: false },
    Shape { name: "news", what: "a small news-like page, many third parties (our choice: 44 requests, 950 KB, 15 origins)", html_kb: 60, css: (3, 50), js: (4, 180), js_3p: (12, 220), img: (14, 380), font: (2, 40), other: (8, 20), spa: false },
    Shape { name: "spa", what: "a single-page app: a small HTML shell, large script bundles, data from an API, images rendered by script (our choice: 1.6 MB, 23 requests)", html_kb: 4, css: (2, 60), js: (3, 1150), js_3p: (2, 40), img: (12, 320), font: (1, 30), other: (2, 60), spa: true },
    Shape { name: "blog", what: "a text-heavy article with a few images (our choice: 17 requests, 545 KB, 4 origins)", html_kb: 45, css: (2, 30), js: (3, 90), js_3p: (1, 20), img: (6, 280), font: (2, 80), other: (1, 0), spa: false },
    Shape { name: "portal", what: "an in-flight Wi-Fi captive portal: one airline origin plus its static and image hosts (our choice: 21 requests, 610 KB)", html_kb: 25, css: (2, 40), js: (4, 210), js_3p: (0, 0), img: (12, 300), font: (2, 35), other: (0, 0), spa: false },
    Shape { name: "search", what: "a search results page: a large inlined HTML, few objects (our choice: 13 requests, 290 KB, 4 origins)", html_kb: 90, css: (1, 10), js: (2, 150), js_3p: (1, 10), img: (8, 30), font: (0, 0), other: (0, 0), spa: false },
];

pub fn names() -> Vec<&'static str> {
    SHAPES.iter().map(|s| s.name).collect()
}

pub fn shape(name: &str) -> Option<&'static Shape> {
    SHAPES.iter().find(|s| s.name == name)
}

/// The page's URL.
pub fn url(name: &str) -> String {
    format!("https://www.{name}.test/")
}

/// The corpus page whose origins include `host`, if any.
pub fn page_of_host(host: &str) -> Option<&'static Shape> {
    let host = host.to_ascii_lowercase();
    let stem = host.strip_suffix(".test")?;
    let name = stem.rsplit('.').next()?;
    shape(name)
}

fn seed(name: &str) -> u64 {
    // FNV-1a: stable across builds and platforms.
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// `n` sizes summing to `kb` KB, spread like real objects (log-normal-ish).
fn sizes(rng: &mut ChaCha8Rng, n: u32, kb: u32, floor: usize) -> Vec<usize> {
    if n == 0 {
        return vec![];
    }
    let w: Vec<f64> = (0..n).map(|_| (rng.random::<f64>() * 2.5).exp()).collect();
    let sum: f64 = w.iter().sum();
    w.iter().map(|x| ((x / sum) * kb as f64 * 1000.0).round().max(floor as f64) as usize).collect()
}

const WORDS: &[&str] = &[
    "flight",
    "cabin",
    "link",
    "satellite",
    "ground",
    "station",
    "latency",
    "route",
    "passenger",
    "window",
    "signal",
    "beam",
    "orbit",
    "gateway",
    "weather",
    "altitude",
    "news",
    "market",
    "city",
    "report",
    "today",
    "update",
    "story",
    "travel",
    "north",
    "south",
    "ocean",
    "coast",
    "river",
    "summit",
];

fn words(rng: &mut ChaCha8Rng, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.random_range(0..WORDS.len())]);
    }
    s
}

/// Pads `s` with `filler` lines until it is `size` bytes.
fn pad(mut s: String, size: usize, open: &str, close: &str, rng: &mut ChaCha8Rng) -> Vec<u8> {
    if s.len() + open.len() + close.len() < size {
        s.push_str(open);
        while s.len() + close.len() < size {
            let line = words(rng, 12);
            let room = size - close.len() - s.len();
            if line.len() + 1 > room {
                s.push_str(&"x".repeat(room));
                break;
            }
            s.push_str(&line);
            s.push('\n');
        }
        s.push_str(close);
    }
    s.into_bytes()
}

struct Builder {
    entries: Vec<Entry>,
}

impl Builder {
    fn add(&mut self, url: String, ct: &str, body: Vec<u8>) {
        let headers = vec![("content-type".to_string(), ct.to_string()), ("cache-control".to_string(), "max-age=86400".to_string()), ("access-control-allow-origin".to_string(), "*".to_string())];
        self.entries.push(Entry { method: "GET".into(), url, status: 200, headers, body });
    }
}

/// Generates the corpus page `name`.
pub fn page(name: &str) -> Option<Archive> {
    let sh = shape(name)?;
    let seed = seed(name);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let o = Origins { www: format!("https://www.{name}.test"), stat: format!("https://static.{name}.test"), img: format!("https://img.{name}.test"), name: name.to_string() };
    let mut b = Builder { entries: Vec::new() };
    // Every size is drawn first, in this order: the page is its seed's.
    let css = sizes(&mut rng, sh.css.0, sh.css.1, 400);
    let js = sizes(&mut rng, sh.js.0, sh.js.1, 300);
    let js3 = sizes(&mut rng, sh.js_3p.0, sh.js_3p.1, 300);
    let imgs = sizes(&mut rng, sh.img.0, sh.img.1, 200);
    let fonts = sizes(&mut rng, sh.font.0, sh.font.1, 100);
    let other = sizes(&mut rng, sh.other.0, sh.other.1, 40);
    let (img_tags, bg_urls) = images(&mut b, &mut rng, &o, &imgs, sh.spa);
    let font_urls = font_files(&mut b, &o, &fonts);
    let css_urls = stylesheets(&mut b, &mut rng, &o, &css, &font_urls, &bg_urls);
    let script3 = third_parties(&mut b, &mut rng, &o, &js3, &other, sh.spa);
    let script1 = first_party_scripts(&mut b, &mut rng, &o, &js, &other, &img_tags, sh.spa);
    let body = document(&mut rng, name, sh, &css_urls, &script1, &script3, &img_tags, bg_urls.len());
    b.add(format!("{}/", o.www), "text/html; charset=utf-8", body);
    // The document first, as a recording would list it.
    b.entries.rotate_right(1);
    Some(Archive { format: FORMAT.into(), url: url(name), source: format!("aerolink corpus page {name:?}, generated (seed {seed:#x}): {}", sh.what), entries: b.entries })
}

/// A corpus page's origins: the document's, static files', images'.
struct Origins {
    name: String,
    www: String,
    stat: String,
    img: String,
}

impl Origins {
    fn third(&self, k: u32) -> String {
        format!("https://t{k}.{}.test", self.name)
    }
}

/// An image the document shows: its URL, width and height.
type ImgTag = (String, u32, u32);

/// Images: the first (largest) is the hero on www; a quarter are CSS
/// backgrounds; the rest are <img> on img. Returns the <img> tags and the
/// backgrounds' URLs.
fn images(b: &mut Builder, rng: &mut ChaCha8Rng, o: &Origins, imgs: &[usize], spa: bool) -> (Vec<ImgTag>, Vec<String>) {
    let mut order: Vec<usize> = (0..imgs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(imgs[i]));
    let img_url = |rank: usize, i: usize| if rank == 0 { format!("{}/hero-{i}.png", o.www) } else { format!("{}/i/{i}.png", o.img) };
    let n_bg = if spa { 0 } else { imgs.len() / 4 };
    let mut img_tags = Vec::new();
    let mut bg_urls = Vec::new();
    for (rank, &i) in order.iter().enumerate() {
        let (w, h) = if rank == 0 { (640, 360) } else { (160 + 16 * (i as u32 % 8), 120) };
        let color = [rng.random_range(60..250), rng.random_range(60..250), rng.random_range(60..250)];
        let url = img_url(rank, i);
        b.add(url.clone(), "image/png", png(w, h, color, imgs[i]));
        if rank > 0 && rank <= n_bg {
            bg_urls.push(url);
        } else {
            img_tags.push((url, w, h));
        }
    }
    (img_tags, bg_urls)
}

/// Fonts, referenced by the first stylesheet; garbage fonts are fetched
/// (the request is what matters) and then rejected by the sanitizer.
fn font_files(b: &mut Builder, o: &Origins, fonts: &[usize]) -> Vec<String> {
    fonts
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let u = format!("{}/f/{i}.woff2", o.stat);
            b.add(u.clone(), "font/woff2", crate::page::filler(s));
            u
        })
        .collect()
}

/// Stylesheets: the first declares the fonts; each holds its share of the
/// background images.
fn stylesheets(b: &mut Builder, rng: &mut ChaCha8Rng, o: &Origins, css: &[usize], font_urls: &[String], bg_urls: &[String]) -> Vec<String> {
    let mut css_urls = Vec::new();
    for (i, &size) in css.iter().enumerate() {
        let mut c = String::new();
        if i == 0 {
            for (k, f) in font_urls.iter().enumerate() {
                let _ = writeln!(c, "@font-face {{ font-family: \"F{k}\"; src: url(\"{f}\") format(\"woff2\"); font-display: swap; }}");
            }
            let fam: Vec<String> = (0..font_urls.len()).map(|k| format!("\"F{k}\"")).collect();
            let _ = writeln!(c, "body {{ margin: 0 auto; max-width: 960px; font-family: {}sans-serif; color: #222; }}", fam.iter().map(|f| format!("{f}, ")).collect::<String>());
            let _ = writeln!(c, "h1 {{ font-size: 2.4em; }} .hero {{ width: 100%; height: auto; }} img {{ margin: 4px; }}");
        }
        for (k, u) in bg_urls.iter().enumerate().filter(|(k, _)| k % css.len().max(1) == i) {
            let _ = writeln!(c, ".bg{k} {{ background: url(\"{u}\"); width: 160px; height: 120px; display: inline-block; }}");
        }
        let u = format!("{}/c/{i}.css", o.stat);
        b.add(u.clone(), "text/css", pad(c, size, "/*\n", "*/\n", rng));
        css_urls.push(u);
    }
    css_urls
}

/// Third parties: one async script each, fetching its share of `other`.
fn third_parties(b: &mut Builder, rng: &mut ChaCha8Rng, o: &Origins, js3: &[usize], other: &[usize], spa: bool) -> Vec<String> {
    let mut script3 = Vec::new();
    for (k, &size) in js3.iter().enumerate() {
        let origin = o.third(k as u32);
        let mut fetches = String::new();
        if !spa {
            for (j, &s) in other.iter().enumerate().filter(|(j, _)| j % js3.len() == k) {
                let (u, ct) = if s < 2000 { (format!("{origin}/b/{j}.gif"), "image/gif") } else { (format!("{origin}/d/{j}.json"), "application/json") };
                let body = if ct == "image/gif" { gif_1x1(s) } else { json(s) };
                b.add(u.clone(), ct, body);
                if ct == "image/gif" {
                    let _ = writeln!(fetches, "new Image().src = \"{u}\";");
                } else {
                    let _ = writeln!(fetches, "fetch(\"{u}\").then(function (r) {{ return r.text(); }});");
                }
            }
        }
        let code = format!("/* third party {k} */\n(function () {{\n{fetches}window.__tp = (window.__tp || 0) + 1;\n}})();\n");
        let u = format!("{origin}/tag.js");
        b.add(u.clone(), "application/javascript", pad(code, size, "/*\n", "*/\n", rng));
        script3.push(u);
    }
    script3
}

/// First-party scripts; the SPA's last bundle renders the page from its
/// API's answers.
fn first_party_scripts(b: &mut Builder, rng: &mut ChaCha8Rng, o: &Origins, js: &[usize], other: &[usize], img_tags: &[ImgTag], spa: bool) -> Vec<String> {
    let www = &o.www;
    let mut script1 = Vec::new();
    for (i, &size) in js.iter().enumerate() {
        let code = if spa && i + 1 == js.len() {
            for (j, &s) in other.iter().enumerate() {
                let items: Vec<String> = img_tags.iter().enumerate().filter(|(t, _)| t % other.len() == j).map(|(_, (u, w, h))| format!("{{\"src\": \"{u}\", \"w\": {w}, \"h\": {h}}}")).collect();
                let body = format!("{{\"items\": [{}], \"pad\": \"{}\"}}", items.join(", "), "x".repeat(s.saturating_sub(40 + items.iter().map(|x| x.len() + 2).sum::<usize>())));
                b.add(format!("{www}/api/{j}.json"), "application/json", body.into_bytes());
            }
            let urls: Vec<String> = (0..other.len()).map(|j| format!("\"{www}/api/{j}.json\"")).collect();
            format!("/* app */\n(function () {{\nvar app = document.getElementById(\"app\");\napp.innerHTML = \"<h1>{}</h1><p>{}</p>\";\n[{}].forEach(function (u) {{ fetch(u).then(function (r) {{ return r.json(); }}).then(function (d) {{ d.items.forEach(function (it) {{ var i = document.createElement(\"img\"); i.src = it.src; i.width = it.w; i.height = it.h; app.appendChild(i); }}); }}); }});\n}})();\n", words(rng, 4), words(rng, 60), urls.join(", "))
        } else {
            format!("/* bundle {i} */\n(function () {{ var s = 0; for (var i = 0; i < 1000; i++) {{ s += i; }} window.__b{i} = s; }})();\n")
        };
        let u = format!("{}/j/{i}.js", o.stat);
        b.add(u.clone(), "application/javascript", pad(code, size, "/*\n", "*/\n", rng));
        script1.push(u);
    }
    script1
}

/// The document: stylesheets and first-party scripts in the head, the
/// images (or the SPA's mount point), third parties last, padded to size.
#[allow(clippy::too_many_arguments)]
fn document(rng: &mut ChaCha8Rng, name: &str, sh: &Shape, css_urls: &[String], script1: &[String], script3: &[String], img_tags: &[ImgTag], n_bg: usize) -> Vec<u8> {
    let mut h = format!("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{name} — aerolink corpus</title>\n");
    for u in css_urls {
        let _ = writeln!(h, "<link rel=\"stylesheet\" href=\"{u}\">");
    }
    for (i, u) in script1.iter().enumerate() {
        let attr = if sh.spa || i >= 2 { " defer" } else { "" };
        let _ = writeln!(h, "<script src=\"{u}\"{attr}></script>");
    }
    h.push_str("</head><body>\n");
    if sh.spa {
        h.push_str("<div id=\"app\">Loading…</div>\n");
    } else {
        let _ = writeln!(h, "<h1>{}</h1>", words(rng, 5));
        for (rank, (u, w, hh)) in img_tags.iter().enumerate() {
            let class = if rank == 0 { " class=\"hero\"" } else { "" };
            let _ = writeln!(h, "<img src=\"{u}\" width=\"{w}\" height=\"{hh}\"{class} alt=\"\">");
            if rank == 0 {
                let _ = writeln!(h, "<p>{}</p>", words(rng, 80));
            }
        }
        for k in 0..n_bg {
            let _ = writeln!(h, "<div class=\"bg{k}\"></div>");
        }
    }
    for u in script3 {
        let _ = writeln!(h, "<script src=\"{u}\" async></script>");
    }
    let mut body = pad(h, sh.html_kb as usize * 1000, "<article>\n", "</article></body></html>\n", rng);
    if !body.ends_with(b"</html>\n") {
        body.extend_from_slice(b"</body></html>\n");
    }
    body
}

fn json(size: usize) -> Vec<u8> {
    format!("{{\"v\": 1, \"pad\": \"{}\"}}", "x".repeat(size.saturating_sub(20))).into_bytes()
}

/// A 1×1 GIF, padded with a comment extension when asked for more bytes.
fn gif_1x1(size: usize) -> Vec<u8> {
    let mut g = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff".to_vec();
    let mut room = size.saturating_sub(g.len() + 26);
    if room > 0 {
        g.extend_from_slice(b"\x21\xfe");
        while room > 0 {
            let n = room.min(255);
            g.push(n as u8);
            g.extend(std::iter::repeat_n(b'x', n));
            room -= n;
        }
        g.push(0);
    }
    g.extend_from_slice(b"\x21\xf9\x04\x01\x00\x00\x00\x00\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00\x3b");
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_is_deterministic_and_has_its_shape() {
        for sh in SHAPES {
            let a = page(sh.name).unwrap();
            assert_eq!(a, page(sh.name).unwrap(), "{} is not deterministic", sh.name);
            assert_eq!(a.entries.len() as u32, sh.requests(), "{} requests", sh.name);
            assert_eq!(a.hosts().len() as u32, sh.origins(), "{} origins", sh.name);
            let kb = a.body_bytes() as f64 / 1000.0;
            assert!((kb / sh.kilobytes() as f64 - 1.0).abs() < 0.06, "{}: {kb} KB, shape {}", sh.name, sh.kilobytes());
            assert_eq!(a.entries[0].url, url(sh.name));
            assert!(a.entries.iter().all(|e| page_of_host(crate::archive::split_url(&e.url).unwrap().1).map(|s| s.name) == Some(sh.name)));
        }
        let m = shape("median").unwrap();
        assert_eq!((m.requests(), m.kilobytes()), (71, 2652), "the HTTP Archive 2024 median desktop page");
    }

    #[test]
    fn images_are_pngs_of_their_size_that_decode() {
        let p = png(160, 120, [200, 100, 50], 50_000);
        assert_eq!(p.len(), 50_000);
        let dec = png::Decoder::new(std::io::Cursor::new(&p));
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (160, 120));
    }

    #[test]
    fn every_reference_in_a_page_is_in_its_archive() {
        for sh in SHAPES {
            let a = page(sh.name).unwrap();
            let sites = crate::archive::Sites::new([a.clone()]);
            for e in &a.entries {
                let text = String::from_utf8_lossy(&e.body);
                for marker in ["src=\"", "href=\"", "url(\"", "fetch(\"", "src = \"", "\"src\": \""] {
                    for part in text.split(marker).skip(1) {
                        let u = part.split('"').next().unwrap();
                        if let Some((_, host, path)) = crate::archive::split_url(u) {
                            assert!(sites.find(host, path).is_some(), "{}: {u} referenced by {} is missing", sh.name, e.url);
                        }
                    }
                }
            }
        }
    }
}
