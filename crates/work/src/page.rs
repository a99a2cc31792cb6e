//! Synthetic web pages: an HTML document referencing objects, optionally
//! through a chain of stylesheets (dependency depth), generated on the fly
//! from the URL so the server needs no files.
//!
//! A page spec is `COUNTxSIZE` terms joined by `+`: `10x100KB`,
//! `1x100KB+50x10KB`; or the built-in `flags` page (seed 001's flag page:
//! an index referencing many tiny icons — 200 images of 1.5 KB, our choice,
//! as the seed gives no counts). Depth 1: the HTML references the objects;
//! depth 2: HTML → CSS → objects (a browser only learns of the images once
//! the CSS has arrived); depth d: d − 1 stylesheets chained by `@import`.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    pub spec: String,
    /// Object sizes in bytes, in reference order.
    pub objects: Vec<u64>,
    pub depth: u32,
}

pub const PAGE_HELP: &str = "a page like \"10x100KB\", \"1x100KB+50x10KB\" or \"flags\" (COUNTxSIZE terms, sizes in B, KB, MB)";

impl Page {
    pub fn parse(spec: &str, depth: u32) -> Result<Page, String> {
        if depth == 0 || depth > 8 {
            return Err("depth must be 1 to 8".into());
        }
        let objects = if spec == "flags" {
            vec![1_500; 200]
        } else {
            let mut v = Vec::new();
            for term in spec.split('+') {
                let (n, size) = term.trim().split_once(['x', '×']).ok_or_else(|| PAGE_HELP.to_string())?;
                let n: usize = n.trim().parse().map_err(|_| PAGE_HELP.to_string())?;
                if !size.trim().ends_with(|c: char| c.is_alphabetic()) {
                    return Err(format!("{PAGE_HELP}; {term:?} has no unit"));
                }
                let size = parse_bytes(size.trim()).ok_or_else(|| PAGE_HELP.to_string())?;
                if n == 0 || n > 10_000 || size == 0 || size > 1 << 30 {
                    return Err(format!("{PAGE_HELP}; 1–10000 objects of 1 B–1 GB"));
                }
                v.extend(std::iter::repeat_n(size, n));
            }
            v
        };
        Ok(Page { spec: spec.to_string(), objects, depth })
    }

    pub fn total_bytes(&self) -> u64 {
        self.objects.iter().sum()
    }

    /// The URL of the page's HTML document.
    pub fn url(&self) -> String {
        format!("/page.html?spec={}&depth={}", self.spec.replace('+', "%2B"), self.depth)
    }
}

/// Bytes with a unit: B, KB (1000), KiB, MB, MiB.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let i = s.find(|c: char| c.is_alphabetic()).unwrap_or(s.len());
    let v: f64 = s[..i].trim().parse().ok()?;
    let m = match s[i..].trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "KiB" => 1024.0,
        "MB" => 1e6,
        "MiB" => 1048576.0,
        "GB" => 1e9,
        _ => return None,
    };
    (v >= 0.0).then(|| (v * m).round() as u64)
}

/// Splits a query string into key/value pairs.
pub fn query(q: &str) -> Vec<(String, String)> {
    q.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.replace("%2B", "+"))).collect()
}

/// What the server sends for a path: `(content type, body)`, or `None`.
pub fn render(path_and_query: &str) -> Option<(&'static str, Vec<u8>)> {
    let (path, q) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    let q = query(q);
    let get = |k: &str| q.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
    match path {
        "/page.html" | "/style.css" => {
            let page = Page::parse(&get("spec")?, get("depth")?.parse().ok()?).ok()?;
            let level: u32 = get("level").and_then(|l| l.parse().ok()).unwrap_or(0);
            let remaining = page.depth - level; // documents still to go, this one included
            let next = format!("/style.css?spec={}&depth={}&level={}", page.spec.replace('+', "%2B"), page.depth, level + 1);
            let objs: Vec<String> = page.objects.iter().enumerate().map(|(i, s)| format!("/obj/{i}.img?size={s}")).collect();
            if path == "/page.html" {
                let mut h = String::from("<!doctype html><html><head><title>aerolink test page</title>");
                if remaining > 1 {
                    h.push_str(&format!("<link rel=\"stylesheet\" href=\"{next}\">"));
                }
                h.push_str("</head><body>\n");
                if remaining == 1 {
                    for o in &objs {
                        h.push_str(&format!("<img src=\"{o}\">\n"));
                    }
                }
                h.push_str("</body></html>\n");
                Some(("text/html", h.into_bytes()))
            } else {
                let mut c = String::new();
                if remaining > 1 {
                    c.push_str(&format!("@import url(\"{next}\");\n"));
                } else {
                    for (i, o) in objs.iter().enumerate() {
                        c.push_str(&format!(".o{i} {{ background: url(\"{o}\"); }}\n"));
                    }
                }
                Some(("text/css", c.into_bytes()))
            }
        }
        p if p.starts_with("/obj/") => {
            let size: u64 = get("size")?.parse().ok()?;
            if size > 1 << 30 {
                return None;
            }
            Some(object_body(size as usize))
        }
        _ => None,
    }
}

/// An object of exactly `size` bytes: a PNG (16×16, padded with a private
/// chunk) when it fits, so a real browser downloads and paints it whole
/// (it abandons an `<img>` whose bytes are not an image), else bytes.
pub fn object_body(size: usize) -> (&'static str, Vec<u8>) {
    let png = png(16, 16, [90, 140, 200], size);
    if png.len() == size {
        ("image/png", png)
    } else {
        ("application/octet-stream", filler(size))
    }
}

/// Deterministic, incompressible-looking bytes.
pub fn filler(n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n);
    let mut x: u32 = 0x9e37_79b9;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push(x as u8);
    }
    v
}

/// References a browser would follow in an HTML or CSS body.
pub fn references(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    for marker in ["src=\"", "href=\"", "url(\""] {
        let mut rest: &str = &text;
        while let Some(i) = rest.find(marker) {
            rest = &rest[i + marker.len()..];
            if let Some(end) = rest.find('"') {
                out.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    out
}

/// Seed 003's object sets by name, or a `COUNTxSIZE` spec.
pub fn object_set(name: &str) -> Result<Vec<u64>, String> {
    match name {
        "short" => Ok(vec![40_000; 10]),
        "medium" => Ok(vec![292_000; 10]),
        "long" => Ok(vec![4_149_000; 10]),
        "large" => Ok(vec![66_390_000; 2]),
        "all" => {
            let mut v = vec![40_000; 10];
            v.extend([292_000; 10]);
            v.extend([4_149_000; 10]);
            v.push(66_390_000);
            Ok(v)
        }
        spec => Page::parse(spec, 1).map(|p| p.objects).map_err(|_| format!("object set {spec:?}: expected short, medium, long, large, all, or {PAGE_HELP}")),
    }
}

/// A PNG of `w`×`h` in a pattern of `color`, padded to `size` bytes with a
/// private ancillary chunk (`alPd`) that decoders skip.
pub fn png(w: u32, h: u32, color: [u8; 3], size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc.write_header().expect("PNG header to memory");
        let mut data = Vec::with_capacity((w * h * 3) as usize);
        for y in 0..h {
            for x in 0..w {
                let stripe = ((x / 16 + y / 16) % 2) as u8;
                data.extend(color.iter().map(|c| c.saturating_sub(stripe * 40)));
            }
        }
        wr.write_image_data(&data).expect("PNG data to memory");
        wr.finish().expect("PNG end to memory");
    }
    // Before IEND (its last 12 bytes), a chunk of 12 bytes' framing.
    let padding = size.saturating_sub(out.len() + 12);
    if padding > 0 {
        let iend = out.split_off(out.len() - 12);
        let mut chunk = b"alPd".to_vec();
        chunk.extend(crate::page::filler(padding));
        out.extend((padding as u32).to_be_bytes());
        out.extend(&chunk);
        out.extend(crc32fast::hash(&chunk).to_be_bytes());
        out.extend(iend);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        let p = Page::parse("1x100KB+2x10KB", 1).unwrap();
        assert_eq!(p.objects, vec![100_000, 10_000, 10_000]);
        assert_eq!(Page::parse("flags", 1).unwrap().objects.len(), 200);
        assert!(Page::parse("lots", 1).is_err());
        assert!(Page::parse("10x", 1).is_err());
        assert!(Page::parse("10x1KB", 0).is_err());
        assert!(Page::parse("10x100", 1).unwrap_err().contains("no unit"));
        assert_eq!(Page::parse("1x100B", 1).unwrap().objects, vec![100]);
    }

    #[test]
    fn a_depth_3_page_reveals_objects_only_at_the_end() {
        let p = Page::parse("3x1KB", 3).unwrap();
        let (_, html) = render(&p.url()).unwrap();
        let r1 = references(&html);
        assert_eq!(r1.len(), 1);
        assert!(r1[0].starts_with("/style.css"));
        let (_, css1) = render(&r1[0]).unwrap();
        let r2 = references(&css1);
        assert_eq!(r2.len(), 1);
        let (_, css2) = render(&r2[0]).unwrap();
        let r3 = references(&css2);
        assert_eq!(r3.len(), 3);
        let (ct, obj) = render(&r3[0]).unwrap();
        assert_eq!((ct, obj.len()), ("image/png", 1000));
        for size in [1, 50, 1_500, 100_000] {
            assert_eq!(object_body(size).1.len(), size, "objects are exactly their size");
        }
    }
}
