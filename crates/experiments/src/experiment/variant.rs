//! `[[variant]]` tables: a built-in profile or file with its rate, RTT or
//! loss scaled (`x2`) or set, or its route's keys changed (`route = {
//! tech = "leo", start = "3 h" }`), usable by name in `profiles`.

use std::collections::BTreeMap;

use aerolink_link::profile::{LossSpec, Override, RateSpec};
use aerolink_link::{BaseDelay, Profile};

use serde::Deserialize;

use crate::workload::table::{KeyErr, Text};

/// Loads a profile by name or file (near the experiment file) with overrides.
pub(super) type Resolve<'a> = &'a dyn Fn(&str, &[Override]) -> Result<Profile, String>;

/// A `[[variant]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct VariantTable {
    name: Text,
    base: Text,
    rate: Option<Text>,
    rtt: Option<Text>,
    loss: Option<Text>,
    /// Keys that replace the base's route keys, one by one.
    route: Option<toml::Table>,
}

/// The variants of an experiment file by name.
pub(super) fn parse(tables: Vec<VariantTable>, resolve: Resolve) -> Result<BTreeMap<String, Profile>, KeyErr> {
    let mut variants: BTreeMap<String, Profile> = BTreeMap::new();
    for (i, vt) in tables.into_iter().enumerate() {
        let key = format!("variant[{}]", i + 1);
        let at = |k: &str, m: String| (format!("{key}.{k}"), m);
        let base_name = vt.base.0.as_str();
        let base = resolve(base_name, &[]).map_err(|m| at("base", m))?;
        let mut ov = Vec::new();
        for (field, value) in [("rate", &vt.rate), ("rtt", &vt.rtt), ("loss", &vt.loss)] {
            if let Some(Text(s)) = value {
                ov.extend(variant_overrides(&base, field, s).map_err(|m| at(field, m))?);
            }
        }
        if let Some(r) = &vt.route {
            if !base.up.described.contains_key("route") {
                return Err(at("route", format!("{base_name} has no route to change; give a base with `route` in [link]")));
            }
            ov.push(Override { scope: "link".into(), key: "route".into(), value: toml::Value::Table(r.clone()).to_string(), flag: "variant route".into() });
        }
        let mut p = resolve(base_name, &ov).map_err(|m| (key.clone(), m))?;
        p.name = vt.name.0.clone();
        p.description = format!("{} — variant of {base_name}", p.description);
        variants.insert(vt.name.0, p);
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
