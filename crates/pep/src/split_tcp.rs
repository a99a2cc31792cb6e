//! The transparent split-TCP proxy: accepts the client's intercepted TCP
//! connections (their local address is the server's, thanks to TPROXY),
//! opens its own connection to that server with its own congestion control,
//! and relays both ways. The client needs no configuration.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;

use aerolink_work::sock::TcpCc;

use crate::error::Result;
use crate::relay::{self, Counters, Stats};

#[derive(Clone, Debug)]
pub struct Options {
    /// The interface facing the clients (e.g. `to-client`).
    pub from: String,
    pub port: u16,
    /// Congestion control of the proxy's onward connections.
    pub cc: TcpCc,
    /// Initial congestion window (segments) of the onward connections.
    pub initcwnd: Option<u32>,
}

async fn relay_one(client: TcpStream, cc: TcpCc, counters: &Counters) -> Result<()> {
    // With TPROXY the accepted socket's local address is where the client
    // was going.
    let dest = client.local_addr()?;
    let server = match relay::connect(dest, cc, Duration::from_secs(10)).await {
        Ok(s) => s,
        Err(e) => {
            counters.failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            relay::reset(&client);
            return Err(e);
        }
    };
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let r = relay::both_ways(relay::pump(&mut cr, &mut sw, &counters.bytes_up), relay::pump(&mut sr, &mut cw, &counters.bytes_down)).await;
    if let Err(e) = &r {
        // One side broke: reset both, so neither end hangs.
        counters.broke("split-tcp", dest, e);
        relay::reset(cr.as_ref());
        relay::reset(sr.as_ref());
    }
    Ok(r?)
}

/// Installs the interception, serves until `stop` resolves, removes it.
pub async fn run(opts: Options, stop: impl std::future::Future<Output = ()>, ready: impl FnOnce()) -> Result<Stats> {
    let counters = Arc::new(Counters::default());
    let handle = {
        let counters = counters.clone();
        let cc = opts.cc;
        move |c: TcpStream| {
            let counters = counters.clone();
            async move {
                counters.connections.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let _active = relay::Active::new(&counters);
                let _ = relay_one(c, cc, &counters).await;
            }
        }
    };
    let listeners = relay::Listeners::bind(opts.port)?;
    let guard = crate::steering::Interception::install(&opts.from, opts.port, opts.initcwnd)?;
    ready();
    tokio::select! {
        _ = listeners.serve(handle) => {}
        _ = stop => {}
    }
    drop(guard);
    relay::drain(&counters, relay::DRAIN).await;
    Ok(counters.snapshot())
}
