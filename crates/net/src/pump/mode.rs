//! Who drives a lab's hops: a thread each ([`super::Pump::run`]) or the
//! process's shared loops ([`super::shared`]); one value set, parsed at the
//! edge (`--pump`).

aerolink_link::choice_core! {
    /// Who drives a lab's hops.
    #[derive(Default)]
    pub enum PumpMode {
        /// A thread per hop, sleeping for its own departures: the most
        /// precise for one busy link.
        #[default]
        Thread = "thread",
        /// The process's event loops, one per core, each driving many hops
        /// ([`super::shared`]): what a fleet of links needs.
        Shared = "shared",
    }
}
