//! `[[variant]]` tables: a built-in profile or file with its rate, RTT or
//! loss scaled (`x2`) or set, usable by name in `profiles`.

use std::collections::BTreeMap;

use aerolink_link::profile::{LossSpec, Override, RateSpec};
use aerolink_link::{BaseDelay, Profile};

use super::KeyErr;

/// Loads a profile by name or file (near the experiment file) with overrides.
pub(super) type Resolve<'a> = &'a dyn Fn(&str, &[Override]) -> Result<Profile, String>;

/// The variants of an experiment file by name.
pub(super) fn parse(t: &toml::Table, resolve: Resolve) -> Result<BTreeMap<String, Profile>, KeyErr> {
    let err = |k: &str, m: String| (k.to_string(), m);
    let mut variants: BTreeMap<String, Profile> = BTreeMap::new();
    let Some(v) = t.get("variant") else { return Ok(variants) };
    {
        let arr = v.as_array().ok_or_else(|| err("variant", "expected [[variant]] tables".into()))?;
        for (i, v) in arr.iter().enumerate() {
            let key = format!("variant[{}]", i + 1);
            let vt = v.as_table().ok_or_else(|| err(&key, "expected a table".into()))?;
            for k in vt.keys() {
                if !["name", "base", "rate", "rtt", "loss"].contains(&k.as_str()) {
                    return Err(err(&format!("{key}.{k}"), "unknown key; allowed: name, base, rate, rtt, loss".into()));
                }
            }
            let vname = vt.get("name").and_then(|x| x.as_str()).ok_or_else(|| err(&format!("{key}.name"), "expected a name".into()))?;
            let base_name = vt.get("base").and_then(|x| x.as_str()).ok_or_else(|| err(&format!("{key}.base"), "expected a profile name or file".into()))?;
            let base = resolve(base_name, &[]).map_err(|m| err(&format!("{key}.base"), m))?;
            let mut ov = Vec::new();
            for field in ["rate", "rtt", "loss"] {
                if let Some(x) = vt.get(field) {
                    let s = x.as_str().ok_or_else(|| err(&format!("{key}.{field}"), "expected \"x<factor>\" or a value in quotes".into()))?;
                    ov.extend(variant_overrides(&base, field, s).map_err(|m| err(&format!("{key}.{field}"), m))?);
                }
            }
            let mut p = resolve(base_name, &ov).map_err(|m| err(&key, m))?;
            p.name = vname.to_string();
            p.description = format!("{} — variant of {base_name}", p.description);
            variants.insert(vname.to_string(), p);
        }
    }
    Ok(variants)
}

/// Overrides that scale (`x2`, `x0.5`) or set a base profile's value.
fn variant_overrides(base: &Profile, field: &str, value: &str) -> Result<Vec<Override>, String> {
    let factor = value.strip_prefix('x').or_else(|| value.strip_prefix('×')).map(|f| f.trim().parse::<f64>().map_err(|_| format!("{value:?}: expected x<number>, like x2 or x0.5")));
    let o = |scope: &str, key: &str, v: String| Override { scope: scope.into(), key: key.into(), value: v, flag: format!("variant {field}") };
    let mut out = Vec::new();
    match (field, factor) {
        (_, Some(Err(m))) => return Err(m),
        ("rtt", None) => out.push(o("link", "rtt", value.into())),
        (f, None) => out.push(o("link", f, value.into())),
        (f, Some(Ok(x))) => {
            if !(x > 0.0 && x.is_finite()) {
                return Err("the factor must be positive".into());
            }
            for (scope, d) in [("up", &base.up), ("down", &base.down)] {
                match f {
                    "rate" => match &d.rate {
                        RateSpec::Constant(r) => out.push(o(scope, "rate", format!("{} bit/s", r.bits_per_sec * x))),
                        _ => return Err("only a constant rate can be scaled".into()),
                    },
                    "rtt" => match &d.delay {
                        BaseDelay::Constant(dl) => out.push(o(scope, "delay", format!("{} ns", (dl.0 as f64 * x).round()))),
                        _ => return Err("only a constant delay can be scaled".into()),
                    },
                    "loss" => match &d.loss {
                        LossSpec::None => {}
                        LossSpec::Bernoulli(p) => out.push(o(scope, "loss", format!("{}", (p * x).min(1.0)))),
                        _ => return Err("only Bernoulli loss can be scaled".into()),
                    },
                    _ => return Err(format!("cannot vary {f}")),
                }
            }
        }
    }
    Ok(out)
}
