//! Writes the log of a synthetic long task, sampled as the recorder samples (every 0.1 s,
//! then at least 1 s apart from 10 minutes on), with lines shaped like the sampler's:
//! `cargo run --release --example long_log -- HOURS OUT.jsonl`. The figures wander
//! pseudo-randomly (a fixed seed), so that compression sees realistic entropy.

use serde_json::json;
use std::io::{BufWriter, Write};
use std::time::Duration;
use tc_profile_format::schema::{category, data_type, track};
use tc_profile_format::{
    encode_line, meta_line, thread_line, EndReason, Footer, Line, Machine, Marker, MetaInfo,
    OpenInterval,
};
use tc_profile_recorder::sampling_interval;

const BASE_INTERVAL: Duration = Duration::from_millis(100);

/// A small xorshift generator: deterministic, no dependency.
struct Wander(u64);

impl Wander {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(hours), Some(out)) = (args.get(1).and_then(|h| h.parse::<f64>().ok()), args.get(2))
    else {
        eprintln!("usage: long_log HOURS OUT.jsonl");
        std::process::exit(2);
    };
    let mut log = BufWriter::new(std::fs::File::create(out)?);
    let mut write = |line: Line| log.write_all(&encode_line(&line));
    write(meta_line(&MetaInfo {
        start_time: 1_795_980_000_000.0,
        interval_ms: 100.0,
        machine: Machine {
            logical_cpus: Some(16),
            physical_cpus: Some(8),
            main_memory: Some(64 << 30),
            cpu_name: Some("Synthetic CPU".to_owned()),
            os: Some("Linux".to_owned()),
        },
        sources: ["cpu", "memory", "io", "net"].map(String::from).to_vec(),
        sync_policy: "interval:1000ms".to_owned(),
        recorder: "long_log".to_owned(),
        ..MetaInfo::default()
    }))?;
    write(thread_line("tc-profile"))?;
    let command = OpenInterval {
        id: 1,
        name: "Command".to_owned(),
        start_time: 1.0,
        category: Some(category::TASK),
        data: Some(json!({"type": data_type::COMMAND, "command": "make -j16", "pid": 4242})),
        key: None,
    };
    write(Line::Open(command.clone()))?;

    let end = Duration::from_secs_f64(hours * 3600.0);
    let mut wander = Wander(0x9e37_79b9_7f4a_7c15);
    let (mut busy, mut used) = (0.3f64, 8.0e9f64);
    let mut elapsed = Duration::ZERO;
    while elapsed < end {
        let next = elapsed + sampling_interval(BASE_INTERVAL, elapsed);
        let (start, stop) = (ms(elapsed), ms(next));
        busy = (busy + (wander.unit() - 0.5) * 0.2).clamp(0.0, 1.0);
        used = (used + (wander.unit() - 0.5) * 2.0e8).clamp(1.0e9, 60.0e9);
        let share = |f: f64| (busy * f * 10000.0).round() / 10000.0;
        let pct = |f: f64| (f * 1000.0).round() / 1000.0;
        let (nice, user, system) = (share(0.02), share(0.8), share(1.0));
        let sample = |name: &str, data| {
            Line::Marker(
                Marker::interval(name, start, stop)
                    .with_category(category::OTHER)
                    .with_data(data),
            )
        };
        write(sample(
            track::CPU,
            json!({"type": data_type::CPU, "cpuPercent": pct(busy), "nice": nice, "user": user,
                   "system": system, "iowait": system, "softirq": system, "steal": system,
                   "nice_pct": pct(nice), "user_pct": pct(user - nice),
                   "system_pct": pct(system - user), "iowait_pct": 0.0, "irq_pct": 0.0,
                   "steal_pct": 0.0, "idle_pct": pct(1.0 - system)}),
        ))?;
        let used_bytes = used as u64;
        write(sample(
            track::MEMORY,
            json!({"type": data_type::MEMORY, "used": used_bytes,
                   "available": (64u64 << 30) - used_bytes, "cached": used_bytes / 3,
                   "buffers": 180_000_000 + used_bytes % 4096, "swap": 0}),
        ))?;
        let bytes = |scale: f64, wander: &mut Wander| (wander.unit() * scale) as u64 / 512 * 512;
        let (read, written) = (bytes(4.0e6, &mut wander), bytes(2.0e7, &mut wander));
        write(sample(
            track::IO,
            json!({"type": data_type::IO, "read_bytes": read, "read_count": read / 65536,
                   "write_bytes": written, "write_count": written / 131072}),
        ))?;
        let (received, sent) = (bytes(1.0e6, &mut wander), bytes(1.0e5, &mut wander));
        write(sample(
            track::NET_IO,
            json!({"type": data_type::NET_IO, "recv_bytes": received, "recv_count": received / 1448,
                   "sent_bytes": sent, "sent_count": sent / 1448}),
        ))?;
        elapsed = next;
    }
    write(Line::Marker(command.close(
        ms(elapsed),
        Some(
            json!({"type": data_type::COMMAND, "command": "make -j16", "pid": 4242,
                    "status": "exit code 0"}),
        ),
    )))?;
    write(Line::Footer(Footer {
        end_time: ms(elapsed),
        reason: EndReason::CommandExited,
    }))?;
    log.flush()
}

fn ms(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1_000_000.0).round() / 1000.0
}
