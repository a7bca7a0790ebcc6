use super::*;
use crate::profile_marker::raw_json;

fn merge(group: &[MarkerRef]) -> Option<String> {
    Merger::default().merge(group).map(str::to_owned)
}

/// A small xorshift generator: the same groups every run.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn unit(&mut self) -> f64 {
        self.below(1 << 53) as f64 / (1u64 << 53) as f64
    }

    /// A number as a log may hold it: an integer, or a fraction written several ways.
    fn number(&mut self, scale: f64) -> String {
        let x = self.unit() * scale;
        match self.below(5) {
            0 => format!("{}", x as u64),
            1 => format!("{x:.1}"),
            2 => format!("{x:.3}"),
            3 => format!("{x}"),
            _ => format!("{x:e}"),
        }
    }

    /// A share, as a number or as an older log's text.
    fn share(&mut self) -> String {
        let share = self.unit();
        if self.below(2) == 0 {
            format!("\"{:.1}%\"", share * 100.0)
        } else {
            format!("{share}")
        }
    }
}

/// The fields of each type of the recorder's tracks, and a few of others': (key, scale),
/// a scale of 0 for a share.
const TYPES: [(&str, &[(&str, f64)]); 16] = [
    (
        "CPU",
        &[
            ("nice", 1.0),
            ("user", 1.0),
            ("system", 1.0),
            ("iowait", 1.0),
            ("softirq", 1.0),
            ("steal", 1.0),
            ("cpuPercent", 0.0),
            ("user_pct", 0.0),
        ],
    ),
    ("Mem", &[("used", 1e10), ("available", 1e10)]),
    ("TaskMem", &[("rss", 1e9), ("processes", 50.0)]),
    ("OtherMem", &[("used", 1e9)]),
    ("CgroupMem", &[("current", 1e9), ("max", 1e10)]),
    (
        "IO",
        &[
            ("read_bytes", 1e8),
            ("write_bytes", 1e8),
            ("write_count", 1e3),
        ],
    ),
    ("NetIO", &[("recv_bytes", 1e7), ("sent_bytes", 1e7)]),
    ("Swap", &[("swap_in", 1e5), ("swap_out", 1e5)]),
    ("ProcessesEnded", &[("count", 10.0), ("cpuTime", 1e3)]),
    (
        "TaskCPU",
        &[("cpu", 1.0), ("cpuPercent", 0.0), ("processes", 9.0)],
    ),
    ("OtherCPU", &[("cpu", 1.0), ("cpuPercent", 0.0)]),
    (
        "CgroupCPU",
        &[("cpu", 1.0), ("cpuPercent", 0.0), ("throttled", 1.0)],
    ),
    ("PSI", &[("some", 100.0), ("full", 100.0)]),
    ("Load", &[("load1", 8.0)]),
    ("CPUFreq", &[("mhz", 4e3)]),
    ("Monitor", &[("zeta", 1.0), ("alpha", 1e6)]),
];

/// `samples` payloads of `kind` (`type` first, as the recorder writes them).
fn payloads(dice: &mut Dice, kind: &str, keys: &[(&str, f64)], samples: usize) -> Vec<String> {
    let share_as_text = dice.below(2) == 0;
    (0..samples)
        .map(|_| {
            let mut text = format!(r#"{{"type":"{kind}""#);
            for &(key, scale) in keys {
                let value = match scale {
                    0.0 if share_as_text => format!("\"{:.1}%\"", dice.unit() * 100.0),
                    0.0 => dice.share(),
                    _ => dice.number(scale),
                };
                text.push_str(&format!(r#","{key}":{value}"#));
            }
            text.push('}');
            text
        })
        .collect()
}

/// The samples of `payloads`, in time order, some of them of no length.
fn group<'a>(dice: &mut Dice, payloads: &'a [String]) -> Vec<MarkerRef<'a>> {
    let mut time = 0.0;
    payloads
        .iter()
        .map(|data| {
            let start = time;
            time += [0.0, 100.0, 1000.0, 123.25][dice.below(4) as usize];
            MarkerRef {
                name: "track",
                start_time: start,
                end_time: Some(time),
                category: Some(1),
                data: Some(data),
            }
        })
        .collect()
}

fn through_a_tree(group: &[MarkerRef]) -> String {
    let group: Vec<_> = group.iter().map(|m| m.to_marker()).collect();
    let merged = stretch::merge(&group).data.unwrap();
    raw_json(&merged).get().to_owned()
}

#[test]
fn flat_payloads_merge_to_the_bytes_a_tree_writes() {
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let rounds: Vec<Vec<String>> = (0..3000)
        .map(|round| {
            let (kind, keys) = TYPES[round % TYPES.len()];
            let samples = 1 + dice.below(6) as usize;
            payloads(&mut dice, kind, keys, samples)
        })
        .collect();
    // One merger for all: each round's keys differ from the round's before.
    let mut merger = Merger::default();
    for payloads in &rounds {
        let group = group(&mut dice, payloads);
        let fast = merger.merge(&group);
        let fast = fast.unwrap_or_else(|| panic!("not flat: {payloads:?}"));
        assert_eq!(fast, through_a_tree(&group), "{payloads:?}");
    }
}

#[test]
fn whitespace_and_a_missing_type_are_still_flat() {
    let payloads = [
        r#" { "used" : 10 , "name" : "a" } "#.to_owned(),
        r#"{"used":2.5,"name":"b"}"#.to_owned(),
    ];
    let mut dice = Dice(7);
    let group = group(&mut dice, &payloads);
    assert_eq!(merge(&group).unwrap(), through_a_tree(&group));
}

#[test]
fn anything_but_a_flat_payload_is_left_to_a_tree() {
    let not_flat = [
        // A metric's rules are the tree's.
        [
            r#"{"type":"Counter","value":1}"#,
            r#"{"type":"Counter","value":2}"#,
        ],
        [
            r#"{"type":"Mem","a":{"b":1}}"#,
            r#"{"type":"Mem","a":{"b":2}}"#,
        ],
        [
            r#"{"type":"Mem","used":1,"free":2}"#,
            r#"{"type":"Mem","free":2,"used":1}"#,
        ],
        [
            r#"{"type":"Mem","used":1}"#,
            r#"{"type":"Mem","used":1,"free":2}"#,
        ],
        [
            r#"{"type":"M\u0065m","used":1}"#,
            r#"{"type":"Mem","used":1}"#,
        ],
        [r#"{"type":"Mem","used":-1}"#, r#"{"type":"Mem","used":1}"#],
        [
            r#"{"type":"Mem","used":1,"used":2}"#,
            r#"{"type":"Mem","used":1,"used":2}"#,
        ],
        [
            r#"{"type":"Mem","used":null}"#,
            r#"{"type":"Mem","used":true}"#,
        ],
        [
            r#"{"type":"Mem","used":1e999}"#,
            r#"{"type":"Mem","used":1}"#,
        ],
        [r#"{"type":"Mem","used":01}"#, r#"{"type":"Mem","used":1}"#],
        [r#"{"type":"Mem","used":1"#, r#"{"type":"Mem","used":1}"#],
        [r#"{}"#, r#"{}"#],
    ];
    for payloads in not_flat {
        let payloads = payloads.map(str::to_owned);
        let mut dice = Dice(11);
        assert_eq!(merge(&group(&mut dice, &payloads)), None, "{payloads:?}");
    }
}
