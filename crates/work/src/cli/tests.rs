//! The workload commands' command lines: every variant round-trips
//! through its flags, and bad values name the flag.
use super::*;
use crate::quic::{Preset, QuicCc, QuicKnobs};

fn quics() -> Vec<QuicArgs> {
    let mut v: Vec<QuicArgs> = Preset::ALL.iter().map(|p| QuicArgs::from(&QuicKnobs::preset(*p))).collect();
    for cc in QuicCc::ALL {
        v.push(QuicArgs {
            quic_preset: Preset::Quinn,
            quic_cc: Some(*cc),
            quic_iw: Some(7),
            quic_stream_window: None,
            quic_conn_window: Some(1 << 30),
            quic_rate: None,
            quic_ack_every: None,
            quic_mtu: None,
            quic_max_cwnd: None,
            quic_pacing_interval: None,
            quic_window_growth: None,
            quic_pacing_gain: None,
            quic_window_unit: None,
        });
    }
    v.push(QuicArgs {
        quic_preset: Preset::HBdp2,
        quic_cc: None,
        quic_iw: None,
        quic_stream_window: Some(1),
        quic_conn_window: None,
        quic_rate: Some(10_000_000),
        quic_ack_every: Some(10),
        quic_mtu: Some(1452),
        quic_max_cwnd: Some(2500),
        quic_pacing_interval: Some(1010),
        quic_window_growth: Some(crate::quic::WindowGrowth::QuicGo),
        quic_pacing_gain: Some(2.0),
        quic_window_unit: Some(1460),
    });
    v
}

/// Every workload command with every value of every closed set at
/// least once, and every optional flag both given and not.
fn every_variant() -> Vec<WorkloadCmd> {
    let server = "198.18.0.2".to_string();
    let mut v = Vec::new();
    for (i, quic) in quics().into_iter().enumerate() {
        let cc = TcpCc::ALL[i % TcpCc::ALL.len()];
        v.push(WorkloadCmd::Serve(ServeArgs {
            cc,
            initcwnd: (i % 2 == 0).then_some(40),
            nagle: i % 2 == 1,
            push: [0, 50, 100][i % 3],
            quic: quic.clone(),
            dns_answer: (i % 2 == 0).then(|| std::net::Ipv4Addr::new(198, 18, 0, 2)),
            tls_resume: i % 2 == 1,
        }));
        for protocol in Protocol::ALL {
            v.push(WorkloadCmd::Web(WebArgs {
                server: server.clone(),
                resolver: (i % 2 == 0).then(|| server.clone()),
                params: WebParams { protocol: *protocol, page: "1x100KB+50x10KB".into(), depth: 3 },
                quic: quic.clone(),
                tls_resume: i % 2 == 0,
                client: WebClientArgs { h2_window: (i % 3 == 1).then_some(65_535 + i as u32) },
            }));
            for mode in ObjectsMode::ALL {
                v.push(WorkloadCmd::Objects(ObjectsArgs { server: server.clone(), params: ObjectsParams { protocol: *protocol, set: "long".into(), mode: *mode }, quic: quic.clone() }));
            }
        }
        for transport in Transport::ALL {
            for direction in BulkDirection::ALL {
                let tcp = TcpClientArgs { mss: (i % 2 == 0).then_some(1024), rcvbuf: (i % 3 == 0).then_some(16_000), quickack: i % 2 == 1 };
                v.push(WorkloadCmd::Bulk(BulkArgs { server: server.clone(), transport: *transport, direction: *direction, bytes: 5_000_000, cc, tcp, quic: quic.clone() }));
            }
            for direction in MessagesDirection::ALL {
                let params = MessagesParams { transport: *transport, direction: *direction, size: 64, duration: Duration::from_millis(1500) };
                v.push(WorkloadCmd::Messages(MessagesArgs {
                    server: server.clone(),
                    params,
                    rate: Rate { bits_per_sec: 1890.5 },
                    nagle: i % 2 == 0,
                    stamp: crate::messages::Stamp::ALL[i % 2],
                    down_size: (i % 2 == 1).then_some(32),
                    down_rate: (i % 3 == 1).then_some(Rate { bits_per_sec: 1024.0 }),
                    quic: quic.clone(),
                }));
            }
        }
    }
    for mechanism in Mechanism::ALL {
        for (j, scenario) in Scenario::ALL.iter().enumerate() {
            let params = RealtimeParams { mechanism: *mechanism, scenario: *scenario, count: 7, interval_ms: 250, size: 32, no_nagle: j % 2 == 0 };
            v.push(WorkloadCmd::Realtime(RealtimeArgs { server: "2001:2::2".into(), params }));
        }
    }
    v.push(WorkloadCmd::Ping(PingArgs { server: server.clone(), count: 3, interval: Duration::from_millis(1500), size: 1024, wait: Duration::from_secs(5), passes: 1 }));
    v.push(WorkloadCmd::Ping(PingArgs { server: server.clone(), count: 4, interval: Duration::from_millis(100), size: 56, wait: Duration::from_secs(5), passes: 2 }));
    for (i, protocol) in BrowserProtocol::ALL.iter().enumerate() {
        let params = BrowserParams { protocol: *protocol, page: if i == 0 { "news".into() } else { "https://www.a.test/x?y=1".into() }, warm: i == 1 };
        v.push(WorkloadCmd::Browser(BrowserArgs {
            server: server.clone(),
            resolver: (i == 1).then(|| "198.18.0.2".into()),
            proxy: (i == 2).then(|| "198.18.0.2:3128".into()),
            params,
            har: (i == 2).then(|| "/tmp/x.har".into()),
            screenshot: (i != 2).then(|| "s.png".into()),
            net_log: (i == 1).then(|| "n.json".into()),
            timeout: Duration::from_secs(60),
        }));
    }
    v.push(WorkloadCmd::Dns(DnsArgs { resolver: "198.18.0.2".into(), count: 100, rounds: 3, interval: Duration::from_secs(300), timeout: Duration::from_secs(10) }));
    v.push(WorkloadCmd::LinkSim(LinkSimArgs { profile: "ldacs1-158k".into(), direction: BulkDirection::Down, count: 10_000_000, size: 60, interval: Duration::from_millis(8), seed: 4 }));
    v.push(WorkloadCmd::Cabin(CabinArgs { server: server.clone(), passengers: 20, bytes: 300_000, direction: crate::bulk::Direction::Up, cc: TcpCc::Bbr }));
    v.push(WorkloadCmd::Conns(ConnsArgs { server, count: 500, bytes: 20_000, timeout: Duration::from_secs(90) }));
    v
}

#[test]
fn every_workload_command_round_trips_through_its_command_line() {
    let all = every_variant();
    assert!(all.len() > 100);
    for cmd in all {
        let args = cmd.to_args();
        let back = WorkloadCmd::from_args(&args).unwrap_or_else(|e| panic!("{args:?} does not parse: {e}"));
        assert_eq!(back, cmd, "{args:?}");
    }
}

#[test]
fn quic_knobs_round_trip_through_their_flags() {
    for preset in Preset::ALL {
        for cc in QuicCc::ALL {
            let mut k = QuicKnobs::preset(*preset);
            k.cc = *cc;
            let cmd = WorkloadCmd::Bulk(BulkArgs {
                server: "198.18.0.2".into(),
                transport: Transport::Quic,
                direction: BulkDirection::Down,
                bytes: 1,
                cc: TcpCc::Cubic,
                tcp: TcpClientArgs::default(),
                quic: QuicArgs::from(&k),
            });
            let WorkloadCmd::Bulk(b) = WorkloadCmd::from_args(cmd.to_args()).unwrap() else { panic!("not bulk") };
            assert_eq!(b.quic.knobs(), k);
            assert!(!k.is_custom());
        }
    }
}

#[test]
fn bad_values_name_the_flag_and_what_is_allowed() {
    let e = WorkloadCmd::from_args(["web", "--server", "x", "--protocol", "h4"]).unwrap_err().to_string();
    assert!(e.contains("--protocol") && e.contains("h1-close"), "{e}");
    let e = WorkloadCmd::from_args(["messages", "--server", "x", "--rate", "fast"]).unwrap_err().to_string();
    assert!(e.contains("--rate") && e.contains("expected"), "{e}");
    let e = WorkloadCmd::from_args(["bulk", "--server", "x", "--bytes", "lots"]).unwrap_err().to_string();
    assert!(e.contains("--bytes") && e.contains("110KB"), "{e}");
}

#[test]
fn byte_counts_take_the_units_experiment_files_use() {
    let WorkloadCmd::Bulk(b) = WorkloadCmd::from_args(["bulk", "--server", "x", "--bytes", "110KB"]).unwrap() else { panic!("not bulk") };
    assert_eq!(b.bytes, 110_000);
    let WorkloadCmd::Conns(c) = WorkloadCmd::from_args(["conns", "--server", "x", "--bytes", "1MiB"]).unwrap() else { panic!("not conns") };
    assert_eq!(c.bytes, 1 << 20);
}
