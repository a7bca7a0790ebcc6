//! Turns marker-file lines into log lines (SPEC.md, "Marker files"): epoch times into the
//! log's time base, begin/end pairs into `open` lines and the markers that end them. The
//! recorder runs it live; the finalizer runs it on what a killed recorder had not taken.

use crate::aggregate::{BatchAggregator, MetricLimits, Sample, SampleValue};
use crate::marker_file::ValueRules;
use crate::marker_file::{
    decode_line_or_plain, decode_text_or_plain, interval_key, CanonicalData, Category, Decoded,
    FileLine, Limits, Metric, PlainMarker, Problem,
};
use crate::metric::MetricKind;
use crate::profile_dir::{DirReader, Item, Scan};
use crate::schema::{as_task_schema, data_type};
use crate::{Close, Dropped, Line, Marker, OpenInterval};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::io;
use std::ops::Range;

mod taken;
pub use taken::{Taken, TakenMarker};

/// The log time of a Unix epoch time in milliseconds: milliseconds since `meta.startTime`,
/// rounded to the microsecond.
pub fn log_time(epoch_ms: f64, start_epoch_ms: f64) -> f64 {
    ((epoch_ms - start_epoch_ms) * 1000.0).round() / 1000.0
}

/// Converts marker-file lines, keeping the intervals that have begun and not yet ended.
pub struct Merger {
    start_epoch_ms: f64,
    limits: Limits,
    open: HashMap<String, Vec<OpenInterval>>,
    open_count: usize,
    schemas: HashSet<String>,
    file_schemas: usize,
    /// The graph keys of the schemas declared by marker files that have graphs.
    value_rules: HashMap<String, ValueRules>,
    next_id: Box<dyn FnMut() -> u64 + Send>,
    /// Metric lines, aggregated within each batch: a batch's metrics are in the log with
    /// the batch, before its checkpoint, so they are taken exactly once like markers.
    metrics: Option<BatchAggregator>,
    /// The lines of the batch under way, copied out of the reader's buffer so that they can
    /// be decoded borrowed; kept to be reused, like the vectors below: a burst's batches
    /// are thousands of lines, and fresh vectors of that size cost a page fault a page.
    batch_text: Vec<u8>,
    /// Per line of the batch: its file (an index into the batch's names) and its bytes.
    batch_lines: Vec<(usize, Range<usize>)>,
    /// The batch's decoded lines, and their order by time (time, index into `decoded`).
    decoded: Vec<Option<(usize, Decoded<'static>)>>,
    order: Vec<(f64, usize)>,
    /// The `data` of the marker being emitted, when the log takes it as serde_json writes
    /// it (kept to be reused, like the vectors above).
    data_text: DataText,
}

/// A fast-path marker's `data` as serde_json writes it, in a buffer kept from one marker
/// to the next.
#[derive(Default)]
struct DataText {
    writer: CanonicalData,
    text: Vec<u8>,
}

impl Merger {
    /// `schemas` are those of `meta.markerSchema` (a file cannot redefine them, and a
    /// marker of one with graphs is checked against them); `next_id` hands out `open` ids
    /// unique in the log.
    pub fn new(
        start_epoch_ms: f64,
        limits: Limits,
        schemas: &[Value],
        next_id: Box<dyn FnMut() -> u64 + Send>,
    ) -> Merger {
        let mut merger = Merger {
            start_epoch_ms,
            limits,
            open: HashMap::new(),
            open_count: 0,
            schemas: HashSet::new(),
            file_schemas: 0,
            value_rules: HashMap::new(),
            next_id,
            metrics: None,
            batch_text: Vec::new(),
            batch_lines: Vec::new(),
            decoded: Vec::new(),
            order: Vec::new(),
            data_text: DataText::default(),
        };
        for schema in schemas.iter().filter_map(Value::as_object) {
            merger.know(schema);
        }
        merger
    }

    /// Records metric lines under these limits, per interval of `interval_ms` on the log's
    /// time base; without this, they are checked and dropped.
    pub fn with_metrics(mut self, limits: MetricLimits, interval_ms: f64) -> Merger {
        self.metrics = Some(BatchAggregator::new(limits, interval_ms));
        self
    }

    /// Takes over an interval opened from a marker file and still open in the log.
    pub fn adopt(&mut self, open: OpenInterval) {
        if let Some(key) = open.key.clone() {
            self.open.entry(key).or_default().push(open);
            self.open_count += 1;
        }
    }

    /// Takes over a schema that a marker file declared, already in the log.
    pub fn adopt_schema(&mut self, schema: &Map<String, Value>) {
        if self.know(schema) {
            self.file_schemas += 1;
        }
    }

    /// Learns a schema's name and value rules; false when its name was known.
    fn know(&mut self, schema: &Map<String, Value>) -> bool {
        let Some(name) = schema.get("name").and_then(Value::as_str) else {
            return false;
        };
        if !self.schemas.insert(name.to_owned()) {
            return false;
        }
        // A line of the recorder's own types is dropped before its values are looked at
        // (`reserved-type`): their rules would only cost a lookup a marker.
        if let Some(rules) = ValueRules::of(schema).filter(|_| !data_type::is_reserved(name)) {
            self.value_rules.insert(name.to_owned(), rules);
        }
        true
    }

    /// Reads what is new in the directory and converts it: the log lines of one batch, in
    /// time order across files, and what was dropped, per file and problem.
    pub fn read_batch(
        &mut self,
        reader: &mut DirReader,
        take_unterminated: bool,
        now_epoch_ms: f64,
    ) -> io::Result<Batch> {
        let mut lines = Vec::new();
        let end = self.read_batch_with(reader, take_unterminated, now_epoch_ms, &mut |taken| {
            lines.push(taken.into_line())
        })?;
        Ok(Batch {
            lines,
            dropped: end.dropped,
            scan: end.scan,
        })
    }

    /// [`Merger::read_batch`], handing each line to `emit` as it is converted, markers of
    /// the fast path borrowed, their `data` as text: the recorder encodes them
    /// straight into the batch's write, building no tree and allocating nothing per line.
    pub fn read_batch_with(
        &mut self,
        reader: &mut DirReader,
        take_unterminated: bool,
        now_epoch_ms: f64,
        emit: &mut dyn FnMut(Taken<'_>),
    ) -> io::Result<BatchEnd> {
        let mut text = std::mem::take(&mut self.batch_text);
        text.clear();
        let mut files: Vec<String> = Vec::new();
        let mut lines = std::mem::take(&mut self.batch_lines);
        lines.clear();
        let mut dropped = DroppedCounts::default();
        let scanned = reader.scan(take_unterminated, &mut |item| match item {
            Item::Line { file, bytes } => {
                if files.last().is_none_or(|last| last != file) {
                    files.push(file.to_owned());
                }
                let start = text.len();
                text.extend_from_slice(bytes);
                lines.push((files.len() - 1, start..text.len()));
                // Kept apart by a newline, the lines of a text that is UTF-8 are UTF-8.
                text.push(b'\n');
            }
            Item::Problem {
                file,
                problem,
                count,
                bytes,
            } => dropped.add(file, problem, count, bytes),
        });
        if scanned.is_ok() {
            self.convert(&text, &files, &lines, &mut dropped, now_epoch_ms, emit);
        }
        self.batch_text = text;
        self.batch_lines = lines;
        Ok(BatchEnd {
            dropped: dropped.into_lines(),
            scan: scanned?,
        })
    }

    /// Decodes a batch's lines (ranges of `text`, each of a file of `files`) and hands the
    /// log lines they make to `emit`, in time order.
    fn convert(
        &mut self,
        text: &[u8],
        files: &[String],
        lines: &[(usize, Range<usize>)],
        dropped: &mut DroppedCounts,
        now_epoch_ms: f64,
        emit: &mut dyn FnMut(Taken<'_>),
    ) {
        let mut decoded = recycled(std::mem::take(&mut self.decoded));
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        let mut data_text = std::mem::take(&mut self.data_text);
        // One check of the whole text for every line: each ends at a newline.
        let utf8 = std::str::from_utf8(text).ok();
        for &(file, ref range) in lines {
            let bytes = range.len() as u64 + 1;
            let line = match utf8 {
                Some(utf8) => decode_text_or_plain(&utf8[range.clone()], &self.limits),
                None => decode_line_or_plain(&text[range.clone()], &self.limits),
            };
            match line {
                Ok(line) => {
                    order.push((time_of(&line), decoded.len()));
                    decoded.push(Some((file, line)));
                }
                Err(problem) => dropped.add(&files[file], problem, 1, bytes),
            }
        }
        // An end in one file may follow a begin in another that was listed after it. Lines
        // of the same time keep their order (the index breaks the tie), as in a stable sort.
        if !order.is_sorted_by(|a, b| a.0.total_cmp(&b.0).is_le()) {
            order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        }
        let mut samples = Vec::new();
        for &(_, index) in &order {
            let Some((file, line)) = decoded[index].take() else {
                continue;
            };
            let file = &files[file];
            let line = match line {
                Decoded::Plain(marker) => {
                    match self.take_plain(marker, now_epoch_ms, &mut data_text) {
                        Ok(marker) => emit(Taken::Marker(marker)),
                        Err(problem) => dropped.add(file, problem, 1, 0),
                    }
                    continue;
                }
                Decoded::Line(line) => line,
            };
            if let (FileLine::Metric(metric), Some(_)) = (&line, &self.metrics) {
                match self.to_log_time(metric.time, now_epoch_ms) {
                    Ok(time) => samples.push((time, sample(metric))),
                    Err(problem) => dropped.add(file, problem, 1, 0),
                }
                if let Some(metrics) = self.metrics.as_mut().filter(|_| !metric.unknown.is_empty())
                {
                    metrics.aggregator.drops.unknown_fields += 1;
                }
                continue;
            }
            match self.take(file, line, now_epoch_ms) {
                Ok(Some(line)) => emit(Taken::Line(line)),
                Ok(None) => {}
                Err(problem) => dropped.add(file, problem, 1, 0),
            }
        }
        if let Some(metrics) = &mut self.metrics {
            for marker in metrics.aggregate(samples) {
                emit(Taken::Line(Line::Marker(marker)));
            }
        }
        self.decoded = recycled(decoded);
        self.order = order;
        self.data_text = data_text;
    }

    /// [`Merger::take`] of a fast-path marker: the same checks, in the same order; its
    /// `data` as its line held it or, written into `data_text`, as serde_json writes it
    /// ([`crate::marker_file::PlainData::as_written`]).
    fn take_plain<'a>(
        &self,
        marker: PlainMarker<'a>,
        now_epoch_ms: f64,
        data_text: &'a mut DataText,
    ) -> Result<TakenMarker<'a>, Problem> {
        let rules = marker.data_type.and_then(|kind| self.value_rules.get(kind));
        if let (Some(rules), Some(data)) = (rules, marker.data) {
            let data = serde_json::from_str(data.text).map_err(|_| Problem::WrongFields)?;
            rules.check(&data)?;
        }
        let time = |epoch_ms: f64| self.to_log_time(epoch_ms, now_epoch_ms);
        let start_time = time(marker.start_time)?;
        let end_time = marker.end_time.map(time).transpose()?;
        let data = match marker.data {
            Some(data) if !data.as_written => {
                data_text.text.clear();
                let written =
                    data_text
                        .writer
                        .write(data.text, self.limits.depth, &mut data_text.text);
                // The fast path checked the text as the writer reads it: not reached.
                written.ok_or(Problem::NotJson)?;
                // Written from UTF-8 text and serde_json's numbers.
                Some(std::str::from_utf8(&data_text.text).map_err(|_| Problem::InvalidUtf8)?)
            }
            data => data.map(|data| data.text),
        };
        Ok(TakenMarker {
            start_time,
            end_time,
            category: Category::index(marker.category),
            name: marker.name,
            data,
        })
    }

    /// Converts one line of `file`; `now_epoch_ms` bounds the times accepted. Returns the
    /// log line to append, if any (a schema already known and a metric give none).
    pub fn take(
        &mut self,
        file: &str,
        line: FileLine,
        now_epoch_ms: f64,
    ) -> Result<Option<Line>, Problem> {
        let time = |epoch_ms: f64| self.to_log_time(epoch_ms, now_epoch_ms);
        Ok(match line {
            FileLine::Marker(marker) => {
                self.check_values(marker.data.as_ref())?;
                let start_time = time(marker.start_time)?;
                let end_time = marker.end_time.map(time).transpose()?;
                Some(Line::Marker(Marker {
                    name: marker.name,
                    start_time,
                    end_time,
                    category: Some(Category::index(marker.category)),
                    data: marker.data.map(Value::Object),
                    open_id: None,
                }))
            }
            FileLine::Begin(begin) => {
                self.check_values(begin.data.as_ref())?;
                let start_time = time(begin.time)?;
                if self.open_count >= self.limits.open_intervals {
                    return Err(Problem::TooManyOpen);
                }
                let key = interval_key(file, &begin.name, begin.id.as_deref());
                let open = OpenInterval {
                    id: (self.next_id)(),
                    name: begin.name,
                    start_time,
                    category: Some(Category::index(begin.category)),
                    data: begin.data.map(Value::Object),
                    key: Some(key.clone()),
                };
                self.open.entry(key).or_default().push(open.clone());
                self.open_count += 1;
                Some(Line::Open(open))
            }
            FileLine::End(end) => {
                self.check_values(end.data.as_ref())?;
                let end_time = time(end.time)?;
                let key = interval_key(file, &end.name, end.id.as_deref());
                let data = end.data.map(Value::Object);
                let begun = match end.id {
                    Some(_) => self.pop_open(&key),
                    None => self
                        .pop_open(&key)
                        .or_else(|| self.pop_same_name(&end.name, end_time)),
                };
                Some(match begun {
                    Some(open) => Line::Marker(open.close(end_time, data)),
                    None => Line::Close(Close {
                        key,
                        name: end.name,
                        time: end_time,
                        data,
                    }),
                })
            }
            FileLine::Schema(schema) => self.declare(schema)?,
            // Metrics get their log lines from read_batch, aggregated.
            FileLine::Metric(metric) => {
                time(metric.time)?;
                None
            }
            FileLine::Unknown => return Err(Problem::UnknownType),
        })
    }

    /// A marker of a schema declared so far holds what the front-end needs to show it
    /// ([`ValueRules`]): a string under a graph key makes it refuse the whole profile.
    fn check_values(&self, data: Option<&Map<String, Value>>) -> Result<(), Problem> {
        let Some(data) = data else {
            return Ok(());
        };
        let kind = data.get("type").and_then(Value::as_str);
        match kind.and_then(|kind| self.value_rules.get(kind)) {
            Some(rules) => rules.check(data),
            None => Ok(()),
        }
    }

    fn to_log_time(&self, epoch_ms: f64, now_epoch_ms: f64) -> Result<f64, Problem> {
        let slack = self.limits.time_slack_ms;
        if epoch_ms < self.start_epoch_ms - slack || epoch_ms > now_epoch_ms + slack {
            return Err(Problem::BadTime);
        }
        Ok(log_time(epoch_ms, self.start_epoch_ms))
    }

    /// The latest interval begun with this key and still open.
    fn pop_open(&mut self, key: &str) -> Option<OpenInterval> {
        let stack = self.open.get_mut(key)?;
        let open = stack.pop()?;
        if stack.is_empty() {
            self.open.remove(key);
        }
        self.open_count -= 1;
        Some(open)
    }

    /// The latest interval begun by name (no id) in any file: a shell running its last
    /// command with exec makes that command's parent, and so its file, another one.
    fn pop_same_name(&mut self, name: &str, end_time: f64) -> Option<OpenInterval> {
        let key = self
            .open
            .iter()
            .filter_map(|(key, stack)| Some((key, stack.last()?)))
            .filter(|(key, open)| same_name_match(key, open, name, end_time))
            .max_by(|a, b| a.1.start_time.total_cmp(&b.1.start_time))?
            .0
            .clone();
        self.pop_open(&key)
    }

    /// A new schema name becomes a `schema` line; a known one (ours, whether declared in
    /// this log or not, or declared before) is ignored: the first declaration wins.
    fn declare(&mut self, mut schema: Map<String, Value>) -> Result<Option<Line>, Problem> {
        let name = schema
            .get("name")
            .and_then(Value::as_str)
            .ok_or(Problem::BadSchema)?;
        if data_type::is_ours(name) || self.schemas.contains(name) {
            return Ok(None);
        }
        if self.file_schemas >= self.limits.schemas {
            return Err(Problem::TooManySchemas);
        }
        self.adopt_schema(&schema);
        as_task_schema(&mut schema);
        Ok(Some(Line::Schema(schema)))
    }
}

/// Whether an end by `name` at `end_time` from another file may end `open` (under `key`).
pub fn same_name_match(key: &str, open: &OpenInterval, name: &str, end_time: f64) -> bool {
    key.starts_with("file:") && open.name == name && open.start_time <= end_time
}

/// `vec` emptied, for lines borrowed from another batch's text, in the same allocation
/// (the standard library collects an emptied vector into one of the same layout in place).
fn recycled<'b>(mut vec: Vec<Option<(usize, Decoded<'_>)>>) -> Vec<Option<(usize, Decoded<'b>)>> {
    vec.clear();
    vec.into_iter().map(|_| unreachable!("emptied")).collect()
}

/// The time a decoded line happened at, to order the lines of several files.
fn time_of(line: &Decoded) -> f64 {
    match line {
        Decoded::Plain(marker) => marker.start_time,
        Decoded::Line(line) => line.time(),
    }
}

/// What one [`Merger::read_batch_with`] found besides its lines.
#[derive(Debug, Default)]
pub struct BatchEnd {
    pub dropped: Vec<Dropped>,
    pub scan: Scan,
}

/// What one [`Merger::read_batch`] produced.
#[derive(Debug, Default)]
pub struct Batch {
    pub lines: Vec<Line>,
    pub dropped: Vec<Dropped>,
    pub scan: Scan,
}

#[derive(Default)]
struct DroppedCounts(HashMap<(String, Problem), (u64, u64)>);

impl DroppedCounts {
    fn add(&mut self, file: &str, problem: Problem, count: u64, bytes: u64) {
        let entry = self.0.entry((file.to_owned(), problem)).or_default();
        entry.0 += count;
        entry.1 += bytes;
    }

    fn into_lines(self) -> Vec<Dropped> {
        self.0
            .into_iter()
            .map(|((file, problem), (count, bytes))| Dropped {
                file,
                problem,
                count,
                bytes,
            })
            .collect()
    }
}

/// A marker file's metric as a sample: its value absolute, never sampled.
fn sample(metric: &Metric) -> Sample {
    let value = match (&metric.value, metric.kind) {
        (Value::String(member), _) => SampleValue::Member(member.clone()),
        (value, MetricKind::Set) => SampleValue::Member(value.to_string()),
        // decode_file_line has checked that any other value is a number.
        (value, _) => SampleValue::Number(value.as_f64().unwrap_or_default()),
    };
    Sample {
        kind: metric.kind,
        name: metric.name.clone(),
        value,
        rate: 1.0,
        tags: metric
            .tags
            .iter()
            .map(|(key, value)| {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                (key.clone(), text)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
