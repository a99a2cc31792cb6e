//! `aerolink stats FILE`: throughput per second, delay percentiles and loss
//! by cause, from a packet log.

use std::io::BufReader;

use aerolink_net::log::{summarize, Summary};

use crate::error::user;

pub fn stats(file: &str, json: bool) -> anyhow::Result<i32> {
    let f = std::fs::File::open(file).map_err(|e| user(format!("{file}: cannot read: {e}")))?;
    let s = summarize(BufReader::new(f)).map_err(|e| user(format!("{file}: {e}")))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print_human(&s);
    }
    Ok(0)
}

fn print_human(s: &Summary) {
    let meta: Vec<String> = s.meta.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("{} — {:.1} s", meta.join(" "), s.duration_s);
    for d in &s.directions {
        let dir = d.dir.map(|d| d.as_str()).unwrap_or("?");
        println!("hop {} {dir}:", d.hop);
        println!("  packets    {} arrived, {} departed ({:.1} KB), {} still in the link at the end", d.arrived_packets, d.departed_packets, d.departed_bytes as f64 / 1e3, d.in_flight_at_end);
        let drops: Vec<String> = d.dropped.iter().map(|(k, v)| format!("{v} by {k} ({:.2}%)", d.drop_fraction[k] * 100.0)).collect();
        println!("  dropped    {}", if drops.is_empty() { "none".to_string() } else { drops.join(", ") });
        let p = &d.delay_ms;
        println!("  delay ms   min {:.3}  p50 {:.3}  p90 {:.3}  p99 {:.3}  max {:.3}", p.min, p.p50, p.p90, p.p99, p.max);
        let q = &d.queue_ms;
        println!("  queue ms   p50 {:.3}  p99 {:.3}  max {:.3}", q.p50, q.p99, q.max);
        let tp: Vec<String> = d.throughput_bps.iter().map(|b| format!("{:.0}", b / 1e3)).collect();
        println!("  kbit/s per second: {}", tp.join(" "));
        println!("  mean throughput {:.1} kbit/s", d.mean_throughput_bps / 1e3);
        if d.retransmissions > 0 {
            println!("  ARQ        {} retransmissions", d.retransmissions);
        }
        if let Some(sf) = &d.superframes {
            println!(
                "  DAMA       {} super-frames ({} with data): allocated {:.1} KB, used {:.1} KB ({:.1} %)",
                sf.count,
                sf.busy,
                sf.allocated_bytes as f64 / 1e3,
                sf.used_bytes as f64 / 1e3,
                sf.utilization * 100.0
            );
            let per_s: Vec<String> = sf.allocated_bps.iter().zip(&sf.used_bps).map(|(a, u)| format!("{:.0}/{:.0}", a / 1e3, u / 1e3)).collect();
            println!("  allocated/used kbit/s per second: {}", per_s.join(" "));
        }
        if !d.handovers.is_empty() {
            let h: Vec<String> = d.handovers.iter().map(|(p, t)| format!("{p} {t:.3} s")).collect();
            println!("  handover   {}", h.join(", "));
        }
        if let Some(c) = &d.channels {
            println!("  channels   {} call drops, {} redials; {:.1} channel-s down, longest {:.1} s", c.drops, c.redials, c.down_channel_s, c.longest_down_s);
        }
    }
}
