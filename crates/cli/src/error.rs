//! The user's mistakes, kept apart from our failures by type: an error
//! whose chain holds a [`UserError`] or a library error that says it is the
//! user's (a bad profile, experiment or topology file, a missing tool or
//! root) exits with status 2 and one line; anything else exits 1.

use aerolink_experiments::experiment::SpecError;
use aerolink_experiments::gateways::GatewayError;
use aerolink_experiments::profiles::LoadError;
use aerolink_experiments::topology::TopologyError;
use aerolink_experiments::workload::WorkloadError;
use aerolink_link::ProfileError;
use aerolink_net::NetError;
use aerolink_pep::PepError;

pub use aerolink_experiments::UserError;

pub fn user(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UserError(msg.into()))
}

/// Whether `e` is the user's to fix, by the types in its chain.
pub fn is_user(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.is::<UserError>()
            || c.is::<ProfileError>()
            || c.is::<LoadError>()
            || c.is::<TopologyError>()
            || c.is::<SpecError>()
            || c.is::<aerolink_experiments::linkargs::LinkArgsError>()
            || c.is::<WorkloadError>()
            || c.downcast_ref::<NetError>().is_some_and(NetError::is_user)
            || c.downcast_ref::<aerolink_experiments::session::SessionError>().is_some_and(aerolink_experiments::session::SessionError::is_user)
            || c.downcast_ref::<GatewayError>().is_some_and(GatewayError::is_user)
            || c.downcast_ref::<PepError>().is_some_and(PepError::is_user)
    })
}
