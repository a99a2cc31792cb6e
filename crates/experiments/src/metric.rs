//! The figures a run is judged by: a closed set. Each metric carries its
//! stored name (the store's `metrics.name`, the `[[judge]] metric` key, the
//! CSV and JSON columns), a title for people, its unit and which way is
//! better. A name is parsed once, at the edge ([`Metric::from_str`]); a
//! typo in an experiment file is refused there with the names allowed.
//!
//! Adding a figure: one line in the table below, and the workload that
//! measures it puts it into its [`Metrics`] (its module in `workload/`, `Kind::metrics`).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// What a metric counts in; it decides how a value is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds: shown in ms, or in s from 1 000 ms.
    Ms,
    /// Round trips of the link's base RTT.
    Rtts,
    /// Passes over the link: one-way delays, half an RTT (seed 001's "RTTs").
    Passes,
    /// Bits per second.
    BitRate,
    /// A count, bytes, a percentage or a ratio: shown as the number.
    Number,
}

/// Which way a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    /// A description of the run (requests, bytes, connections), neither.
    Neither,
}

macro_rules! metrics {
    ($($variant:ident = $name:literal, $title:literal, $unit:ident, $better:ident;)*) => {
        /// One figure of a run (the module's comment says what it carries).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Metric { $($variant,)* }

        impl Metric {
    /// Whether the metric is itself a ratio of two measured rates (a run's
    /// delivered rate over its offered rate), so that one series of it can
    /// judge a ratio entry with no `vs`.
    pub fn is_ratio(self) -> bool {
        matches!(self, Metric::DeliveredShareUp | Metric::DeliveredShareDown)
    }

            /// Every metric, in the table's order.
            pub const ALL: &'static [Metric] = &[$(Metric::$variant,)*];

            /// Its stored name (`plt_ms`).
            pub fn name(self) -> &'static str {
                match self { $(Metric::$variant => $name,)* }
            }

            /// What it is, for people (`page load time`).
            pub fn title(self) -> &'static str {
                match self { $(Metric::$variant => $title,)* }
            }

            pub fn unit(self) -> Unit {
                match self { $(Metric::$variant => Unit::$unit,)* }
            }

            pub fn better(self) -> Better {
                match self { $(Metric::$variant => Better::$better,)* }
            }
        }
    };
}

metrics! {
    // Page loads (web, browser) and object sets.
    PltMs = "plt_ms", "page load time", Ms, Lower;
    TtfbMs = "ttfb_ms", "time to first byte", Ms, Lower;
    TotalMs = "total_ms", "time to fetch the set", Ms, Lower;
    OnloadMs = "onload_ms", "onload event", Ms, Lower;
    DclMs = "dcl_ms", "DOMContentLoaded", Ms, Lower;
    FpMs = "fp_ms", "first paint", Ms, Lower;
    FcpMs = "fcp_ms", "first contentful paint", Ms, Lower;
    LcpMs = "lcp_ms", "largest contentful paint", Ms, Lower;
    LastByteMs = "last_byte_ms", "last byte", Ms, Lower;
    DnsLookups = "dns_lookups", "DNS lookups a page load waited for", Number, Lower;
    DnsLookupMsMean = "dns_lookup_ms_mean", "mean DNS lookup in a page load", Ms, Lower;
    ObjectMsMean = "object_ms_mean", "mean object fetch time (request sent to last byte)", Ms, Lower;
    CacheObjectMsMean = "cache_object_ms_mean", "mean fetch time of the objects a cache on the path handled (HIT or MISS)", Ms, Lower;
    CacheHits = "cache_hits", "objects answered by a cache on the path (X-Cache: HIT)", Number, Higher;
    CacheHitMsMean = "cache_hit_ms_mean", "mean fetch time of objects a cache answered", Ms, Lower;
    CacheMissMsMean = "cache_miss_ms_mean", "mean fetch time of objects a cache fetched (X-Cache: MISS)", Ms, Lower;
    CacheUnmarked = "cache_unmarked", "objects loaded through a cache that count as neither HIT nor MISS (no answer, no X-Cache, or no end seen)", Number, Lower;
    CacheHitsOver100MsPct = "cache_hits_over_100ms_pct", "cache hits that took over 100 ms", Number, Lower;
    ObjectMsMedian = "object_ms_median", "median object fetch time (request sent to last byte)", Ms, Lower;
    ObjectMsMedianSmall = "object_ms_median_small", "median fetch time of objects under 1 KB (bytes received, headers included)", Ms, Lower;
    ObjectMsMedianLarge = "object_ms_median_large", "median fetch time of objects of 50–100 KB (bytes received, headers included)", Ms, Lower;
    ObjectMsSizeGap = "object_ms_size_gap", "median fetch time of 50–100 KB objects less that of objects under 1 KB", Ms, Neither;
    Connections = "connections", "connections", Number, Neither;
    ConnsPerOrigin = "conns_per_origin", "connections per origin", Number, Neither;
    Origins = "origins", "origins", Number, Neither;
    Requests = "requests", "requests", Number, Neither;
    FailedRequests = "failed_requests", "failed requests", Number, Lower;
    RequestsH1 = "requests_h1", "requests over HTTP/1.1", Number, Neither;
    RequestsH2 = "requests_h2", "requests over HTTP/2", Number, Neither;
    RequestsH3 = "requests_h3", "requests over HTTP/3", Number, Neither;
    RequestsOther = "requests_other", "requests over another protocol (or none: a cache, data: URLs)", Number, Neither;
    BodyBytes = "body_bytes", "body bytes", Number, Neither;
    Bytes = "bytes", "bytes", Number, Neither;
    ClientRetransmits = "client_retransmits", "client retransmits (TCP) / lost packets (QUIC)", Number, Lower;
    // Bulk transfers.
    CompletionMs = "completion_ms", "completion time", Ms, Lower;
    GoodputBps = "goodput_bps", "goodput", BitRate, Higher;
    // Cabins: the slowest passenger, how evenly the link was shared.
    CompletionMsMax = "completion_ms_max", "slowest passenger's completion time", Ms, Lower;
    JainIndex = "jain_index", "Jain's fairness index over the passengers' goodputs", Number, Higher;
    SenderRetransmits = "sender_retransmits", "sender retransmits", Number, Lower;
    SenderSrttMsMax = "sender_srtt_ms_max", "largest smoothed RTT (sender)", Ms, Lower;
    SenderTimeouts = "sender_timeouts", "retransmission timeouts that expired at the sender (TCP downloads)", Number, Lower;
    SenderRtoMsMedian = "sender_rto_ms_median", "retransmission timeout, no back-off (sender, median of 100 ms samples)", Ms, Neither;
    // Messages (seed 004), each way and both.
    DeliveredBpsUp = "delivered_bps_up", "delivered rate (up)", BitRate, Higher;
    DeliveredBpsDown = "delivered_bps_down", "delivered rate (down)", BitRate, Higher;
    DeliveredBps = "delivered_bps", "delivered rate, every direction added", BitRate, Higher;
    DeliveredShareUp = "delivered_share_up", "delivered rate / offered rate (up)", Number, Higher;
    DeliveredShareDown = "delivered_share_down", "delivered rate / offered rate (down)", Number, Higher;
    LatencyMsMeanUp = "latency_ms_mean_up", "mean message latency (up)", Ms, Lower;
    LatencyMsMeanDown = "latency_ms_mean_down", "mean message latency (down)", Ms, Lower;
    LatencyMsMeanBoth = "latency_ms_mean_both", "mean message latency (both ways)", Ms, Lower;
    LatencyMsP50Up = "latency_ms_p50_up", "median message latency (up)", Ms, Lower;
    LatencyMsP50Down = "latency_ms_p50_down", "median message latency (down)", Ms, Lower;
    // Real-time updates (seed 001 §8).
    LatencyMsMean = "latency_ms_mean", "mean update latency", Ms, Lower;
    LatencyMsMeanS2c = "latency_ms_mean_s2c", "server → client latency", Ms, Lower;
    LatencyMsMeanC2s = "latency_ms_mean_c2s", "client → server latency", Ms, Lower;
    LatencyMsP50S2c = "latency_ms_p50_s2c", "median server → client latency", Ms, Lower;
    LatencyMsP50C2s = "latency_ms_p50_c2s", "median client → server latency", Ms, Lower;
    MessagesS2c = "messages_s2c", "updates received (server → client)", Number, Neither;
    MessagesC2s = "messages_c2s", "updates received (client → server)", Number, Neither;
    // Every mean latency again in round trips and in passes ([`Metric::in_rtts`]).
    LatencyRttMean = "latency_rtt_mean", "mean update latency in RTTs", Rtts, Lower;
    LatencyRttMeanS2c = "latency_rtt_mean_s2c", "server → client latency in RTTs", Rtts, Lower;
    LatencyRttMeanC2s = "latency_rtt_mean_c2s", "client → server latency in RTTs", Rtts, Lower;
    LatencyRttMeanUp = "latency_rtt_mean_up", "mean message latency (up) in RTTs", Rtts, Lower;
    LatencyRttMeanDown = "latency_rtt_mean_down", "mean message latency (down) in RTTs", Rtts, Lower;
    LatencyRttMeanBoth = "latency_rtt_mean_both", "mean message latency (both ways) in RTTs", Rtts, Lower;
    LatencyPassesMean = "latency_passes_mean", "mean update latency in passes over the link (one-way delays; seed 001's \"RTTs\")", Passes, Lower;
    LatencyPassesMeanS2c = "latency_passes_mean_s2c", "server → client latency in passes over the link", Passes, Lower;
    LatencyPassesMeanC2s = "latency_passes_mean_c2s", "client → server latency in passes over the link", Passes, Lower;
    LatencyPassesMeanUp = "latency_passes_mean_up", "mean message latency (up) in passes over the link", Passes, Lower;
    LatencyPassesMeanDown = "latency_passes_mean_down", "mean message latency (down) in passes over the link", Passes, Lower;
    LatencyPassesMeanBoth = "latency_passes_mean_both", "mean message latency (both ways) in passes over the link", Passes, Lower;
    // Pings (seed 004 Table 2, seed 000's RTTs).
    RttMsMean = "rtt_ms_mean", "mean ping RTT", Ms, Lower;
    RttMsMin = "rtt_ms_min", "least ping RTT", Ms, Lower;
    RttMsP50 = "rtt_ms_p50", "median ping RTT", Ms, Lower;
    RttMsMax = "rtt_ms_max", "largest ping RTT", Ms, Lower;
    RttMsSd = "rtt_ms_sd", "ping RTT standard deviation", Ms, Lower;
    PingLossPct = "ping_loss_pct", "pings unanswered", Number, Lower;
    // Shares of the replies (seed 000 §4.1's first hop: the cabin Wi-Fi), in %.
    RttUnder2MsPct = "rtt_under_2ms_pct", "replies in under 2 ms", Number, Higher;
    RttOver10MsPct = "rtt_over_10ms_pct", "replies taking 10 ms or more", Number, Lower;
    // Loss per 100 s window of pings (seed 000 §4.2, Figure 4), in %.
    LossWindowsFreePct = "loss_windows_free_pct", "100 s windows without a lost ping", Number, Higher;
    LossWindowsOver30Pct = "loss_windows_over_30_pct", "100 s windows losing over 30 % of pings", Number, Lower;
    LossWindowMedianPct = "loss_window_median_pct", "median loss of a 100 s window", Number, Lower;
    LossWindowP90Pct = "loss_window_p90_pct", "90th-percentile loss of a 100 s window", Number, Lower;
    LossWindowMaxPct = "loss_window_max_pct", "largest loss of a 100 s window", Number, Lower;
    // A route flown again and again (ping's `passes`): the correlation of
    // the passes' windows (seed 000 §4.4).
    PlaceLossCorr = "place_loss_corr", "loss bound to place: correlation of the passes' windows", Number, Neither;
    PlaceRttCorr = "place_rtt_corr", "round-trip time bound to place: correlation of the passes' windows", Number, Neither;
    // DNS lookups, each name twice back to back (seed 000 §5.1, §5.3).
    DnsFirstMsMedian = "dns_first_ms_median", "median first lookup", Ms, Lower;
    DnsHitMs = "dns_hit_ms", "lookup answered from a cache (lower mode)", Ms, Lower;
    DnsMissMs = "dns_miss_ms", "first lookup that crossed the link (upper mode)", Ms, Lower;
    DnsFirstCachedPct = "dns_first_cached_pct", "first lookups answered from a cache", Number, Higher;
    DnsSecondCachedPct = "dns_second_cached_pct", "second lookups answered from a cache", Number, Higher;
    DnsBothMissPct = "dns_both_miss_pct", "names whose both lookups missed", Number, Lower;
    DnsFailedPct = "dns_failed_pct", "first lookups unanswered", Number, Lower;
    // Messages through a link model in simulated time (seed 002 §6), shares.
    SimLoss = "sim_loss", "messages lost (simulated time)", Number, Lower;
    SimTryLoss = "sim_try_loss", "tries that failed (simulated time)", Number, Lower;
    SimLossIndependentTries = "sim_loss_independent_tries", "loss after the ARQ's retries, each try failing independently with the measured per-try loss (computed)", Number, Lower;
    SimDelayMsMean = "sim_delay_ms_mean", "mean time through the link (simulated time)", Ms, Lower;
    // What the emulator saw (every run).
    LinkDropsDown = "link_drops_down", "link drops ↓", Number, Neither;
    LinkDropsUp = "link_drops_up", "link drops ↑", Number, Neither;
    WireBytes = "wire_bytes", "IP bytes on the link, both ways", Number, Lower;
    WireBytesUp = "wire_bytes_up", "IP bytes on the link ↑", Number, Lower;
    WireBytesDown = "wire_bytes_down", "IP bytes on the link ↓", Number, Lower;
    // A bonded link's calls (seed 004's connection statistics).
    CallDropsCh0 = "call_drops_ch0", "call drops, channel 0", Number, Lower;
    CallDropsCh1 = "call_drops_ch1", "call drops, channel 1", Number, Lower;
    CallDropsCh2 = "call_drops_ch2", "call drops, channel 2", Number, Lower;
    CallDropsCh3 = "call_drops_ch3", "call drops, channel 3", Number, Lower;
    HandoverTriggerMs = "handover_trigger_ms", "first handover commanded at (since the link started)", Ms, Neither;
    HeaderSharePct = "header_share_pct", "headers' share of the bytes on the link, the transfer's direction (IP packets plus the link's own header, less the payload), %", Number, Lower;
    LdacsMarginDbUp = "ldacs_margin_db_up", "L-DACS link budget: dB above the 8.7 dB working point (return link, up)", Number, Higher;
    LdacsMarginDbDown = "ldacs_margin_db_down", "L-DACS link budget: dB above the 8.7 dB working point (forward link, down)", Number, Higher;
    HandoverL2StartMs = "handover_l2_start_ms", "first handover: the aircraft left the old cell at (since the link started)", Ms, Neither;
    HandoverMs = "handover_ms", "handover: leaving the old cell to the binding acknowledged", Ms, Lower;
    LinkDropsRadio = "link_drops_radio", "link drops by its loss model or ARQ giving up (not queue, not outage)", Number, Lower;
    LinkDropsRadioDown = "link_drops_radio_down", "link drops ↓ by its loss model or ARQ giving up", Number, Lower;
    LinkDropsRadioUp = "link_drops_radio_up", "link drops ↑ by its loss model or ARQ giving up", Number, Lower;
    AllocatedUsedPct = "allocated_used_pct", "share of the return link's allocated capacity (DVB-RCS2 bandwidth on demand) the terminals sent in", Number, Higher;
    RedialMsMean = "redial_ms_mean", "mean time to redial a dropped call", Ms, Lower;
    ChannelDownPctMean = "channel_down_pct_mean", "share of the run a bonded link's channel was down, mean over its channels, %", Number, Lower;
    ChannelsAllDownPct = "channels_all_down_pct", "share of the run every channel of a bonded link was down at once, %", Number, Lower;
    ChannelsAllDownIndependentPct = "channels_all_down_independent_pct", "share of the run every channel would be down at once if they dropped independently (the product of their down shares), %", Number, Lower;
    ChannelsAllDownExcessPct = "channels_all_down_excess_pct", "all channels down at once beyond independent drops (all-down share less the product of the channels' shares), percentage points", Number, Lower;
    EmulatorRefused = "emulator_refused", "frames the emulator lost (refused by the kernel; an aerolink bug)", Number, Lower;
}

impl Metric {
    /// A mean latency in ms again in round trips and in passes over the
    /// link (`add_rtt_metrics`); `None` for any other metric.
    pub fn in_rtts(self) -> Option<(Metric, Metric)> {
        use Metric::*;
        Some(match self {
            LatencyMsMean => (LatencyRttMean, LatencyPassesMean),
            LatencyMsMeanS2c => (LatencyRttMeanS2c, LatencyPassesMeanS2c),
            LatencyMsMeanC2s => (LatencyRttMeanC2s, LatencyPassesMeanC2s),
            LatencyMsMeanUp => (LatencyRttMeanUp, LatencyPassesMeanUp),
            LatencyMsMeanDown => (LatencyRttMeanDown, LatencyPassesMeanDown),
            LatencyMsMeanBoth => (LatencyRttMeanBoth, LatencyPassesMeanBoth),
            _ => return None,
        })
    }

    /// A value as people read it: ms (or s from 1 000 ms), round trips,
    /// passes, bit rates, whole numbers. The one formatter of reports,
    /// benches and progress lines.
    pub fn fmt(self, v: f64) -> String {
        if !v.is_finite() {
            return "–".into();
        }
        match self.unit() {
            Unit::Ms if v >= 1000.0 => format!("{:.2} s", v / 1e3),
            Unit::Ms if v >= 100.0 => format!("{v:.0} ms"),
            Unit::Ms => format!("{v:.1} ms"),
            Unit::Rtts => format!("{v:.2} RTT"),
            Unit::Passes => format!("{v:.2} passes"),
            Unit::BitRate => bit_rate(v),
            Unit::Number if v.fract() == 0.0 => format!("{v:.0}"),
            Unit::Number => format!("{v:.2}"),
        }
    }
}

/// A rate in bit/s as people read it: kbit/s, Mbit/s or Gbit/s.
pub fn bit_rate(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2} Gbit/s", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} Mbit/s", v / 1e6)
    } else {
        format!("{:.2} kbit/s", v / 1e3)
    }
}

/// Ordered by name, as the store, CSV columns and progress lines list them.
impl Ord for Metric {
    fn cmp(&self, other: &Self) -> Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for Metric {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no metric; its message lists the names allowed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no metric {0:?}: expected one of {names}", names = Metric::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "))]
pub struct UnknownMetric(pub String);

impl FromStr for Metric {
    type Err = UnknownMetric;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Metric::ALL.iter().copied().find(|m| m.name() == s).ok_or_else(|| UnknownMetric(s.to_string()))
    }
}

impl serde::Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A run's figures.
pub type Metrics = BTreeMap<Metric, f64>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse_back() {
        let mut seen = std::collections::BTreeSet::new();
        for m in Metric::ALL {
            assert!(seen.insert(m.name()), "{} twice", m.name());
            assert_eq!(m.name().parse::<Metric>(), Ok(*m));
        }
        let e = "plt".parse::<Metric>().unwrap_err().to_string();
        assert!(e.starts_with("no metric \"plt\": expected one of plt_ms, "), "{e}");
    }

    #[test]
    fn values_are_shown_in_their_unit() {
        assert_eq!(Metric::PltMs.fmt(1234.0), "1.23 s");
        assert_eq!(Metric::RttMsSd.fmt(377.4), "377 ms");
        assert_eq!(Metric::TtfbMs.fmt(12.34), "12.3 ms");
        assert_eq!(Metric::GoodputBps.fmt(2.5e6), "2.50 Mbit/s");
        assert_eq!(Metric::DeliveredBpsUp.fmt(2400.0), "2.40 kbit/s");
        assert_eq!(Metric::LatencyRttMean.fmt(1.5), "1.50 RTT");
        assert_eq!(Metric::LatencyPassesMean.fmt(2.0), "2.00 passes");
        assert_eq!(Metric::Connections.fmt(6.0), "6");
        assert_eq!(Metric::ConnsPerOrigin.fmt(1.5), "1.50");
        assert_eq!(Metric::PltMs.fmt(f64::NAN), "–");
    }

    #[test]
    fn every_mean_latency_has_its_round_trip_and_pass_forms() {
        for m in Metric::ALL.iter().filter(|m| m.name().starts_with("latency_ms_mean")) {
            let (r, p) = m.in_rtts().unwrap_or_else(|| panic!("{m} has no RTT form"));
            assert_eq!(r.name(), m.name().replacen("latency_ms", "latency_rtt", 1));
            assert_eq!(p.name(), m.name().replacen("latency_ms", "latency_passes", 1));
        }
    }
}
