//! `web`: our client loads a synthetic page as a browser would (HTML, then
//! what it references, through stylesheets to `depth`). With `resolver`
//! the load begins with a lookup of the page's name, at a resolver aboard
//! (dnsmasq in the aircraft gateway) or at the ground's name server; its
//! time counts in the page load, as a browser's does.

use aerolink_work::cli::{WebArgs, WebClientArgs, WebParams, WorkloadCmd};
use aerolink_work::quic::QuicArgs;
use aerolink_work::web::{Protocol, WebResult};
use serde::{Deserialize, Serialize};

use super::table::{de, fields, Choice, KeyErr, Many, Text};
use super::ResolverAt;
use super::{Kind, Knobs, Measured, Workload, WorkloadError, WorkloadKind};
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Web {
    pub protocol: Protocol,
    pub page: String,
    pub depth: u32,
    /// Look the page's name up at this resolver first; `None`: dial the
    /// server's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<ResolverAt>,
}

pub const KIND: WorkloadKind = WorkloadKind { name: "web", keys: fields::<Table>, expand, base_knobs: Knobs::default };

/// A `[[workload]]` table of type web: each key one value or a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(alias = "protocol")]
    protocols: Option<Many<Choice<Protocol>>>,
    #[serde(alias = "page")]
    pages: Many<Text>,
    #[serde(alias = "depth")]
    depths: Option<Many<i64>>,
    #[serde(alias = "resolver")]
    resolvers: Option<Many<Choice<ResolverAt>>>,
}

fn expand(t: toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let t: Table = de(t)?;
    let mut out = Vec::new();
    let resolvers: Vec<Option<ResolverAt>> = t.resolvers.map_or(vec![None], |m| m.0.into_iter().map(|c| Some(c.0)).collect());
    for Choice(protocol) in Many::or(t.protocols, vec![Choice(Protocol::H2)]) {
        for Text(page) in &t.pages.0 {
            for &depth in &Many::or(t.depths.clone(), vec![1]) {
                for &resolver in &resolvers {
                    out.push(Workload::Web(Web { protocol, page: page.clone(), depth: depth.clamp(0, 100) as u32, resolver }));
                }
            }
        }
    }
    Ok(out)
}

impl Kind for Web {
    fn expected_bytes(&self) -> u64 {
        aerolink_work::page::Page::parse(&self.page, self.depth).map(|p| p.total_bytes()).unwrap_or(0)
    }
    fn validate(&self) -> Result<(), WorkloadError> {
        aerolink_work::page::Page::parse(&self.page, self.depth).map(|_| ()).map_err(|why| WorkloadError::Page { page: self.page.clone(), why })
    }
    fn protocol(&self) -> String {
        self.protocol.to_string()
    }
    fn params_label(&self) -> String {
        let dns = self.resolver.map(|r| format!(" dns:{r}")).unwrap_or_default();
        if self.depth > 1 {
            format!("{} depth {}{dns}", self.page, self.depth)
        } else {
            format!("{}{dns}", self.page)
        }
    }
    fn resolver_aboard(&self) -> bool {
        self.resolver == Some(ResolverAt::Aboard)
    }
    fn resolves_names(&self) -> bool {
        self.resolver.is_some()
    }
    fn client_cmd(&self, server: String, knobs: &Knobs) -> WorkloadCmd {
        // The ground's name server is the workload server; a resolver
        // aboard takes its place (`Workload::client_args`).
        let resolver = self.resolver.map(|_| server.clone());
        WorkloadCmd::Web(WebArgs {
            server,
            resolver,
            params: WebParams { protocol: self.protocol, page: self.page.clone(), depth: self.depth },
            quic: QuicArgs::from(&knobs.quic),
            tls_resume: knobs.tls_resume,
            client: WebClientArgs { h2_window: knobs.h2_window },
        })
    }
    fn table_metrics(&self) -> Vec<Metric> {
        vec![TtfbMs, Connections, ClientRetransmits, LinkDropsDown, LinkDropsUp]
    }
    fn headline(&self) -> Metric {
        PltMs
    }
}

impl Measured for Web {
    type Result = WebResult;
    fn metrics(r: &WebResult) -> Metrics {
        let mut m = Metrics::from([
            (PltMs, r.plt_ms),
            (TtfbMs, r.ttfb_ms),
            (Connections, r.connections as f64),
            (Requests, r.requests as f64),
            (BodyBytes, r.body_bytes as f64),
            (ClientRetransmits, r.client_retransmits as f64),
        ]);
        if let Some(d) = r.dns_ms {
            m.insert(DnsLookups, 1.0);
            m.insert(DnsLookupMsMean, d);
        }
        m
    }
}
