//! The stage registry: which link mechanisms exist, which profile keys each
//! reads, and the order a direction's pipeline chains them in.
//!
//! Adding a mechanism (an ARQ, a bandwidth-on-demand scheduler, a bonded
//! set of channels): write its module — a [`Stage`] and a [`StageKind`] that
//! parses its keys into a typed field of [`DirectionSpec`] and builds the
//! stage from it — and add it to [`KINDS`] at its place in the chain.
//! Nothing else changes: profiles accept its keys, `profiles show` and the
//! profile hash describe it, and every pipeline builds it.

use crate::profile::keys::RawKeys;
use crate::profile::{DirectionSpec, Loader, ProfileError};
use crate::stage::{Stage, StageContext};

/// One kind of stage: its profile keys, their parser, and its builder.
pub trait StageKind: Sync {
    fn name(&self) -> &'static str;
    /// The direction keys it owns (in `[link]`, `[up]`, `[down]`).
    fn keys(&self) -> &'static [&'static str];
    /// The RNG slot it draws from, if it is random (unique in the registry;
    /// see [`StageContext::rng`]).
    fn rng_slot(&self) -> Option<u64> {
        None
    }
    /// Reads its keys from `raw` (those present) into `spec`, and writes
    /// how each reads to a person into `spec.described`.
    fn parse(&self, raw: &RawKeys, load: Loader<'_>, spec: &mut DirectionSpec) -> Result<(), ProfileError>;
    /// Its stage for one direction, or `None` when the spec leaves it out.
    fn build(&self, spec: &DirectionSpec, ctx: &StageContext) -> Option<Box<dyn Stage>>;
}

/// Every kind, in pipeline order.
pub static KINDS: &[&dyn StageKind] = &[
    &crate::handover::KIND,
    &crate::cabin::KIND,
    &crate::bottleneck::KIND,
    &crate::dama::KIND,
    &crate::ldacs::KIND,
    &crate::bonded::KIND,
    &crate::loss::KIND,
    &crate::route::KIND,
    &crate::delay::KIND,
];

/// Every direction key a profile may use, in registry order.
pub fn direction_keys() -> Vec<&'static str> {
    KINDS.iter().flat_map(|k| k.keys().iter().copied()).collect()
}

/// Parses one direction's keys through every kind.
pub(crate) fn parse_direction(raw: &RawKeys, load: Loader<'_>) -> Result<DirectionSpec, ProfileError> {
    let mut d = DirectionSpec::default();
    for k in KINDS {
        k.parse(raw, load, &mut d)?;
    }
    Ok(d)
}

/// The stages of one direction, in order.
pub fn build(spec: &DirectionSpec, ctx: &StageContext) -> Vec<Box<dyn Stage>> {
    KINDS.iter().filter_map(|k| k.build(spec, ctx)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_rng_slots_are_unique_and_delay_ends_the_chain() {
        let keys = direction_keys();
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), keys.len(), "a key claimed twice: {keys:?}");
        let slots: Vec<u64> = KINDS.iter().filter_map(|k| k.rng_slot()).collect();
        let mut s = slots.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), slots.len(), "two stages share an RNG slot");
        assert_eq!(KINDS.last().map(|k| k.name()), Some("delay"));
    }

    #[test]
    fn a_spec_builds_only_the_stages_it_needs() {
        let ctx = StageContext { seed: 1, stream: 0, rtt: crate::Duration::ZERO, hop: None };
        let plain = DirectionSpec::default();
        let names: Vec<_> = build(&plain, &ctx).iter().map(|s| s.name()).collect();
        assert_eq!(names, ["bottleneck", "delay"]);
        let lossy = DirectionSpec { loss: crate::profile::LossSpec::Bernoulli(0.1), ..DirectionSpec::default() };
        let names: Vec<_> = build(&lossy, &ctx).iter().map(|s| s.name()).collect();
        assert_eq!(names, ["bottleneck", "loss", "delay"]);
    }
}
