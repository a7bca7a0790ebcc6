//! A group's recommendation: the cheapest catalog type whose cores cover the p95 of the
//! tasks' CPU p95 and whose memory covers the highest memory peak, each used to at most
//! [`HEADROOM`] of it; refused for a group of too few tasks or with OOM kills.

use crate::fleet::aggregate::GroupFigures;
use crate::fleet::catalog::{Catalog, InstanceType};
use serde::Serialize;

/// A recommended type keeps the cores' p95 and the memory's max under this share of it,
/// as the summary's hint does.
pub const HEADROOM: f64 = 0.75;
/// Fewer tasks than this say too little of a pool's p95.
pub const MIN_TASKS: u64 = 20;
const GIB: f64 = (1u64 << 30) as f64;

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Advice {
    /// A cheaper type covers the group.
    Smaller,
    /// The pool's type is the cheapest that covers it.
    Keep,
    /// The pool's type does not cover it.
    Larger,
    /// Fewer than [`MIN_TASKS`] tasks.
    TooFewTasks,
    /// Tasks were OOM-killed: their peaks say less than they needed.
    OomKilled,
    /// No CPU or memory figures, or no catalog type covers them.
    NoAnswer,
}

impl Advice {
    /// The JSON form's name: `smaller`, `too-few-tasks`.
    pub fn name(self) -> &'static str {
        match self {
            Advice::Smaller => "smaller",
            Advice::Keep => "keep",
            Advice::Larger => "larger",
            Advice::TooFewTasks => "too-few-tasks",
            Advice::OomKilled => "oom-killed",
            Advice::NoAnswer => "no-answer",
        }
    }
}

#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Recommendation {
    pub advice: Advice,
    /// The type recommended, for `smaller`, `keep` and `larger`.
    pub instance_type: Option<InstanceType>,
    /// The catalog's entry of the pool's own type, when it has one.
    pub current: Option<InstanceType>,
    /// What 1,000 tasks of the group's mean duration cost less on the recommended type,
    /// at the catalog's prices (negative: more).
    pub saving_per_1000_tasks: Option<f64>,
    pub text: String,
}

pub fn recommend(figures: &GroupFigures, catalog: &Catalog) -> Recommendation {
    let current = figures
        .instance_type
        .as_deref()
        .and_then(|name| catalog.get(name))
        .cloned();
    let answer = |advice, text: String| Recommendation {
        advice,
        instance_type: None,
        current: current.clone(),
        saving_per_1000_tasks: None,
        text,
    };
    if figures.tasks < MIN_TASKS {
        let text = format!(
            "{} tasks: too few to recommend (at least {MIN_TASKS})",
            figures.tasks
        );
        return answer(Advice::TooFewTasks, text);
    }
    if figures.oom_kills > 0 {
        let text = format!(
            "{} in {}: not smaller; the peaks understate what they needed, give them more \
             memory",
            count(figures.oom_kills, "OOM kill"),
            count(figures.oom_killed_tasks, "task")
        );
        return answer(Advice::OomKilled, text);
    }
    let (Some(cores), Some(memory)) = (&figures.cores_used, &figures.memory_peak_bytes) else {
        return answer(Advice::NoAnswer, "no CPU or memory figures".to_owned());
    };
    let (need_cores, need_memory) = (cores.p95 / HEADROOM, memory.max / HEADROOM);
    let Some(chosen) = catalog.cheapest_covering(need_cores, need_memory).cloned() else {
        let text = format!(
            "no catalog type has {need_cores:.1} cores and {:.1} GiB",
            need_memory / GIB
        );
        return answer(Advice::NoAnswer, text);
    };
    let advice = advice(&chosen, current.as_ref(), figures);
    let hours_per_1000 = figures.mean_duration_s * 1000.0 / 3600.0;
    let saving = current
        .as_ref()
        .map(|current| (current.price_per_hour - chosen.price_per_hour) * hours_per_1000);
    let need = format!(
        "cores p95 {:.1}, memory max {:.1} GiB, at most {:.0} % of",
        cores.p95,
        memory.max / GIB,
        HEADROOM * 100.0
    );
    let text = match (advice, saving) {
        (Advice::Keep, _) => format!("keep {}: {need} it", chosen.name),
        (_, Some(saving)) => format!(
            "{} ({need} it): {} per 1,000 tasks",
            chosen.name,
            signed_money(saving)
        ),
        (_, None) => format!("{} ({need} it)", chosen.name),
    };
    Recommendation {
        advice,
        instance_type: Some(chosen),
        current,
        saving_per_1000_tasks: saving,
        text,
    }
}

fn advice(chosen: &InstanceType, current: Option<&InstanceType>, figures: &GroupFigures) -> Advice {
    if let Some(current) = current {
        return match chosen.price_per_hour.total_cmp(&current.price_per_hour) {
            _ if chosen.name == current.name => Advice::Keep,
            std::cmp::Ordering::Less => Advice::Smaller,
            _ => Advice::Larger,
        };
    }
    // Not in the catalog: compared by what the instances offered.
    let offered = figures.offered_cores.zip(figures.offered_memory_bytes);
    match offered {
        Some((cores, memory)) if chosen.cores > cores || chosen.memory_bytes > memory => {
            Advice::Larger
        }
        Some((cores, memory)) if chosen.cores == cores && chosen.memory_bytes == memory => {
            Advice::Keep
        }
        _ => Advice::Smaller,
    }
}

/// `1 task`, `2 tasks`.
fn count(n: u64, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

/// `saves $12.34`, `costs $1.20 more`.
pub fn signed_money(saving: f64) -> String {
    if saving >= 0.0 {
        format!("saves ${saving:.2}")
    } else {
        format!("costs ${:.2} more", -saving)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::aggregate::Spread;

    fn group(tasks: u64, cores_p95: f64, memory_max_gib: f64, on: &str) -> GroupFigures {
        let spread = |v: f64| {
            Some(Spread {
                p50: v,
                p95: v,
                max: v,
            })
        };
        GroupFigures {
            tasks,
            duration_s: spread(3600.0),
            mean_duration_s: 3600.0,
            cores_used: spread(cores_p95),
            memory_peak_bytes: spread(memory_max_gib * GIB),
            idle_share: None,
            oom_kills: 0,
            oom_killed_tasks: 0,
            timeouts: 0,
            instance_type: Some(on.to_owned()),
            offered_cores: None,
            offered_memory_bytes: None,
        }
    }

    #[test]
    fn the_cheapest_covering_type_is_kept_and_too_few_tasks_get_none() {
        let catalog = Catalog::default();
        let keep = recommend(&group(20, 1.4, 2.9, "c5.large"), &catalog);
        assert_eq!(keep.advice, Advice::Keep, "{}", keep.text);
        assert_eq!(keep.saving_per_1000_tasks, Some(0.0));
        let smaller = recommend(&group(20, 1.4, 2.9, "m5.xlarge"), &catalog);
        assert_eq!(smaller.advice, Advice::Smaller);
        // An hour a task: the difference of the prices, a thousand times.
        let saving = smaller.saving_per_1000_tasks.unwrap();
        assert!((saving - (0.192 - 0.085) * 1000.0).abs() < 1e-9, "{saving}");
        let few = recommend(&group(19, 1.4, 2.9, "m5.xlarge"), &catalog);
        assert_eq!((few.advice, few.instance_type), (Advice::TooFewTasks, None));
        assert_eq!(few.text, "19 tasks: too few to recommend (at least 20)");
    }
}
