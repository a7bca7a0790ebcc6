//! The markers of a recording or a profile, held as columns: times as numbers, each
//! (name, category) pair interned, every payload's JSON text in one arena, a payload the
//! same as the marker's before held once (a track's markers often repeat theirs: it was
//! half the memory of a 100,000-marker log's). A marker takes 20 bytes besides its payload
//! (24 once sorting moved any), 4 more with a payload of its own, and none is an allocation
//! of its own: a marker as a struct of strings took about 150.

use crate::profile_marker::{MarkerRef, ProfileMarker};
use arena::Arena;
use std::collections::HashMap;
use std::ops::Range;

mod arena;

/// Markers in columns, in the order they were added until [`Markers::sort_by_start`].
#[derive(Clone, Debug, Default)]
pub struct Markers {
    names: Vec<Box<str>>,
    name_ids: HashMap<Box<str>, u32>,
    /// The (name, category) pairs: a marker holds one index for both, as few pairs recur.
    kinds: Vec<(u32, Option<u32>)>,
    kind_ids: HashMap<(u32, Option<u32>), u32>,
    kind: Vec<u32>,
    start: Vec<f64>,
    /// NaN for an instant: JSON has no NaN, so no marker read ends at one.
    end: Vec<f64>,
    /// Whether each marker brought a payload of its own or repeats the one before's: its
    /// payload's index in `payload_end` is the count of those brought up to it, less one.
    /// A bit a marker, where an index took 32 (0.4 MB of a 100,000-marker profile).
    brought_payload: Bits,
    /// Where each payload ends in `arena`; it starts where the one before ends, and an
    /// empty one is none (no JSON value is empty).
    payload_end: Offsets,
    arena: Arena,
    /// Where the last payload starts: it is the arena's tail, which the next marker's
    /// payload is checked against.
    last_payload_start: usize,
    /// The column index of the marker at each position, once sorting moved any: a
    /// permutation costs 4 bytes a marker, columns moved would cost twice them all.
    order: Option<Vec<u32>>,
    /// The kinds added last, tried before hashing: a machine log's tracks take turns, a
    /// tick's four or five kinds one after another, and hashing each marker's name and
    /// kind twice (read, then put on the span's timeline) was 5 % of the CPU of a task's
    /// profile over an hour at 0.1 s.
    recent_kinds: [Option<u32>; RECENT_KINDS],
}

/// How many kinds [`Markers::push`] tries before hashing: more than a tick's tracks.
const RECENT_KINDS: usize = 8;

impl Markers {
    pub fn len(&self) -> usize {
        self.kind.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kind.is_empty()
    }

    /// The marker at `position`; panics past the end, as a slice does.
    pub fn get(&self, position: usize) -> MarkerRef<'_> {
        self.at_index(self.index(position), self.payload_at(position))
    }

    /// The marker in column `index`, given its payload's text (empty for none).
    fn at_index<'a>(&'a self, index: usize, data: &'a str) -> MarkerRef<'a> {
        let (name, category) = self.kinds[self.kind[index] as usize];
        MarkerRef {
            name: &self.names[name as usize],
            start_time: self.start[index],
            end_time: end_or_none(self.end[index]),
            category,
            data: payload_or_none(data),
        }
    }

    /// The start of the marker at `position`: one column, for the profile's writer.
    pub(crate) fn start_time(&self, position: usize) -> f64 {
        self.start[self.index(position)]
    }

    pub(crate) fn end_time(&self, position: usize) -> Option<f64> {
        end_or_none(self.end[self.index(position)])
    }

    /// The text of the payload of the marker at `position`, empty for none.
    fn payload_at(&self, position: usize) -> &str {
        self.payload_text(self.brought_payload.count_through(self.index(position)) - 1)
    }

    /// Whether any payload's text holds `text`: one search of them all, for a caller that
    /// looks for a rare kind of payload before reading each marker's.
    pub(crate) fn payloads_hold(&self, text: &str) -> bool {
        self.arena.holds(text)
    }

    fn payload_text(&self, payload: usize) -> &str {
        self.arena.get(self.payload_range(payload))
    }

    /// Where the payload numbered `payload` lies in the arena.
    fn payload_range(&self, payload: usize) -> Range<usize> {
        let start = payload
            .checked_sub(1)
            .map_or(0, |p| self.payload_end.get(p));
        start..self.payload_end.get(payload)
    }

    pub(crate) fn category(&self, position: usize) -> Option<u32> {
        self.kinds[self.kind[self.index(position)] as usize].1
    }

    fn index(&self, position: usize) -> usize {
        self.order
            .as_ref()
            .map_or(position, |order| order[position] as usize)
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = MarkerRef<'_>> + '_ {
        self.in_order()
            .map(|(index, data)| self.at_index(index, data))
    }

    /// The payloads in order: [`Markers::iter`]'s, without the rest of each marker.
    pub(crate) fn payloads(&self) -> impl ExactSizeIterator<Item = Option<&str>> + '_ {
        self.in_order().map(|(_, data)| payload_or_none(data))
    }

    fn in_order(&self) -> InOrder<'_> {
        InOrder {
            markers: self,
            position: 0,
            walk: PayloadWalk::default(),
        }
    }

    /// The index in [`Markers::names`] of the name of the marker at `position`.
    pub(crate) fn name_id(&self, position: usize) -> u32 {
        self.kinds[self.kind[self.index(position)] as usize].0
    }

    /// The distinct names.
    pub(crate) fn names(&self) -> &[Box<str>] {
        &self.names
    }

    /// Adds a marker whose payload is JSON text (as every `MarkerRef` a column or a
    /// `RawValue` gives): it is written out as it is.
    pub(crate) fn push(&mut self, marker: MarkerRef<'_>) {
        let kind = self.kind_id(marker.name, marker.category);
        if let Some(order) = &mut self.order {
            order.push(next_id(&self.kind));
        }
        self.kind.push(kind);
        self.start.push(marker.start_time);
        self.end.push(marker.end_time.unwrap_or(f64::NAN));
        let data = marker.data.unwrap_or_default();
        let repeated = !self.payload_end.low.is_empty()
            && same_payload(
                self.arena.get(self.last_payload_start..self.arena.len()),
                data,
            );
        if !repeated {
            self.last_payload_start = self.arena.len();
            self.arena.push_str(data);
            self.payload_end.push(self.arena.len());
        }
        self.brought_payload.push(!repeated);
    }

    fn kind_id(&mut self, name: &str, category: Option<u32>) -> u32 {
        // Markers of a kind come in runs, or take turns with a few others.
        let recent = self.recent_kinds.iter().flatten().find(|&&kind| {
            let (kind_name, kind_category) = self.kinds[kind as usize];
            kind_category == category && &*self.names[kind_name as usize] == name
        });
        if let Some(&kind) = recent {
            return kind;
        }
        let kind = self.hashed_kind_id(name, category);
        self.recent_kinds.rotate_right(1);
        self.recent_kinds[0] = Some(kind);
        kind
    }

    fn hashed_kind_id(&mut self, name: &str, category: Option<u32>) -> u32 {
        let name = match self.name_ids.get(name) {
            Some(&id) => id,
            None => {
                let id = next_id(&self.names);
                self.names.push(name.into());
                self.name_ids.insert(name.into(), id);
                id
            }
        };
        *self.kind_ids.entry((name, category)).or_insert_with(|| {
            let id = next_id(&self.kinds);
            self.kinds.push((name, category));
            id
        })
    }

    /// Moves `other`'s markers in after these, in its order: its columns appended, its
    /// payloads' text taken over whole rather than copied a marker at a time (a span's
    /// machine segments, 21 MB of it for an hour at 0.1 s, were copied and held twice at
    /// the end: the span's and the last segment's).
    pub(crate) fn append(&mut self, other: Markers) {
        let first = next_id(&self.kind);
        let kinds: Vec<u32> = other
            .kinds
            .iter()
            .map(|&(name, category)| self.hashed_kind_id(&other.names[name as usize], category))
            .collect();
        if self.order.is_some() || other.order.is_some() {
            let order = self.order.get_or_insert_with(|| (0..first).collect());
            match &other.order {
                Some(theirs) => order.extend(theirs.iter().map(|&index| first + index)),
                None => order.extend((0..next_id(&other.kind)).map(|index| first + index)),
            }
        }
        self.kind
            .extend(other.kind.iter().map(|&kind| kinds[kind as usize]));
        self.start.extend_from_slice(&other.start);
        self.end.extend_from_slice(&other.end);
        for index in 0..other.len() {
            self.brought_payload.push(other.brought_payload.get(index));
        }
        let payloads = other.payload_end.low.len();
        let base = self.arena.append(other.arena);
        for payload in 0..payloads {
            self.payload_end.push(base + other.payload_end.get(payload));
        }
        if payloads > 0 {
            self.last_payload_start = base + other.last_payload_start;
        }
    }

    /// Gives each marker the start and end that `times` makes of its own, or leaves it out
    /// where that is None: in place, unless one is left out.
    pub(crate) fn retime(
        &mut self,
        mut times: impl FnMut(f64, Option<f64>) -> Option<(f64, Option<f64>)>,
    ) {
        let mut kept = Vec::with_capacity(self.len());
        for index in 0..self.len() {
            let retimed = times(self.start[index], end_or_none(self.end[index]));
            if let Some((start, end)) = retimed {
                self.start[index] = start;
                self.end[index] = end.unwrap_or(f64::NAN);
            }
            kept.push(retimed.is_some());
        }
        if kept.iter().all(|&keep| keep) {
            return;
        }
        let kept_at: Vec<bool> = (0..self.len()).map(|p| kept[self.index(p)]).collect();
        self.retain(|position, _| kept_at[position]);
    }

    /// Keeps the markers that `keep` says to (given each one's position), in their order.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(usize, MarkerRef<'_>) -> bool) {
        let kept: Vec<bool> = self.iter().enumerate().map(|(p, m)| keep(p, m)).collect();
        if kept.iter().all(|&k| k) {
            return;
        }
        let mut kept_markers = Markers::default();
        for (marker, keep) in self.iter().zip(kept) {
            if keep {
                kept_markers.push(marker);
            }
        }
        *self = kept_markers;
    }

    /// Sorts by start time, keeping the order of equal starts.
    pub(crate) fn sort_by_start(&mut self) {
        let sorted = (1..self.len()).all(|i| {
            let (before, after) = (self.start_time(i - 1), self.start_time(i));
            before.total_cmp(&after).is_le()
        });
        if sorted {
            return;
        }
        let mut order = self
            .order
            .take()
            .unwrap_or_else(|| (0..next_id(&self.kind)).collect());
        order.sort_by(|&a, &b| self.start[a as usize].total_cmp(&self.start[b as usize]));
        self.order = Some(order);
    }

    /// The markers as owned values, for the few paths that edit them one by one.
    pub(crate) fn to_vec(&self) -> Vec<ProfileMarker> {
        self.iter().map(|marker| marker.owned()).collect()
    }
}

/// The markers in order, as each one's column index and payload text (empty for none).
struct InOrder<'a> {
    markers: &'a Markers,
    position: usize,
    walk: PayloadWalk,
}

impl<'a> Iterator for InOrder<'a> {
    type Item = (usize, &'a str);

    /// Inlined into each walk (writing the payload column, bounding tracks): as a call it
    /// saved and restored registers and returned its pair through memory, about a tenth
    /// of its instructions.
    #[inline]
    fn next(&mut self) -> Option<(usize, &'a str)> {
        let markers = self.markers;
        if self.position == markers.len() {
            return None;
        }
        let index = markers.index(self.position);
        self.position += 1;
        Some((index, self.walk.payload(markers, index)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.markers.len() - self.position;
        (left, Some(left))
    }
}

impl ExactSizeIterator for InOrder<'_> {}

/// Finds the payloads of markers taken in order by walking the arena along
/// `brought_payload` from the marker before's: counting the bits through each marker (a
/// rank a marker) and reading where its payload starts was most of reading every payload.
/// Sorting moves few markers, so the walk starts again with a rank only where the order
/// jumps.
#[derive(Default)]
struct PayloadWalk {
    /// The column index the walk stands before.
    next_index: usize,
    /// The payloads brought before `next_index`, and where the last of them lies in the
    /// arena.
    payloads_brought: usize,
    payload: Range<usize>,
}

impl PayloadWalk {
    /// The text of the payload of the marker in column `index`, empty for none.
    fn payload<'a>(&mut self, markers: &'a Markers, index: usize) -> &'a str {
        if index != self.next_index {
            self.jump_to(markers, index);
        }
        self.next_index = index + 1;
        if markers.brought_payload.get(index) {
            let start = self.payload.end;
            self.payload = start..markers.payload_end.get(self.payloads_brought);
            self.payloads_brought += 1;
        }
        markers.arena.get(self.payload.clone())
    }

    /// Stands just before the marker in column `index`: a rank.
    fn jump_to(&mut self, markers: &Markers, index: usize) {
        self.payloads_brought = index
            .checked_sub(1)
            .map_or(0, |before| markers.brought_payload.count_through(before));
        self.payload = match self.payloads_brought.checked_sub(1) {
            Some(last) => markers.payload_range(last),
            None => 0..0,
        };
    }
}

/// Offsets into the arena, in order, as their low 32 bits: the high bits are the 4 GiB
/// boundaries passed before each (a few, if any), kept apart.
#[derive(Clone, Debug, Default)]
struct Offsets {
    low: Vec<u32>,
    /// The offset from which each further 4 GiB is added.
    wraps: Vec<u32>,
}

impl Offsets {
    fn push(&mut self, offset: usize) {
        let index = next_id(&self.low);
        while (offset as u64 >> 32) > self.wraps.len() as u64 {
            self.wraps.push(index);
        }
        self.low.push(offset as u32);
    }

    fn get(&self, index: usize) -> usize {
        let low = self.low[index] as usize;
        if self.wraps.is_empty() {
            return low;
        }
        let high = self.wraps.partition_point(|&wrap| wrap as usize <= index) as u64;
        (high << 32 | low as u64) as usize
    }
}

/// Bits in order, with the count of set bits before each word of 64, so that the count
/// through any bit takes a lookup and a popcount.
#[derive(Clone, Debug, Default)]
struct Bits {
    words: Vec<u64>,
    set_before: Vec<u32>,
    len: usize,
}

impl Bits {
    fn push(&mut self, bit: bool) {
        let (word, at) = (self.len / 64, self.len % 64);
        if at == 0 {
            let before = match (self.set_before.last(), self.words.last()) {
                (Some(&count), Some(&last)) => count + last.count_ones(),
                _ => 0,
            };
            self.set_before.push(before);
            self.words.push(0);
        }
        self.words[word] |= u64::from(bit) << at;
        self.len += 1;
    }

    /// The bit at `index`; panics past the end, as a slice does.
    fn get(&self, index: usize) -> bool {
        assert!(index < self.len, "bit {index} of {}", self.len);
        self.words[index / 64] >> (index % 64) & 1 == 1
    }

    /// The set bits among the first `index + 1`; panics past the end, as a slice does.
    fn count_through(&self, index: usize) -> usize {
        assert!(index < self.len, "bit {index} of {}", self.len);
        let (word, at) = (index / 64, index % 64);
        let through = self.words[word] & (u64::MAX >> (63 - at));
        self.set_before[word] as usize + through.count_ones() as usize
    }
}

/// Whether two payloads are the same text. Payloads that differ mostly differ near their
/// end (a step's text, a sample's figures), so their last 8 bytes are compared first, in
/// one instruction, before the whole texts.
fn same_payload(a: &str, b: &str) -> bool {
    let tail = |text: &str| text.as_bytes().last_chunk::<8>().copied();
    a.len() == b.len() && tail(a) == tail(b) && a == b
}

/// An end as a marker has it: NaN is an instant's.
fn end_or_none(end: f64) -> Option<f64> {
    (!end.is_nan()).then_some(end)
}

/// A payload as a marker has it: the empty text is none.
fn payload_or_none(data: &str) -> Option<&str> {
    (!data.is_empty()).then_some(data)
}

/// The index the next item of `items` will have: below 4 G, as a marker takes more than a
/// byte of memory.
fn next_id<T>(items: &[T]) -> u32 {
    u32::try_from(items.len()).unwrap_or_else(|_| unreachable!("4 G markers"))
}

impl FromIterator<ProfileMarker> for Markers {
    fn from_iter<I: IntoIterator<Item = ProfileMarker>>(markers: I) -> Markers {
        let mut columns = Markers::default();
        columns.extend(markers);
        columns
    }
}

impl Extend<ProfileMarker> for Markers {
    fn extend<I: IntoIterator<Item = ProfileMarker>>(&mut self, markers: I) {
        for marker in markers {
            self.push(marker.as_ref());
        }
    }
}

impl<'a> IntoIterator for &'a Markers {
    type Item = MarkerRef<'a>;
    type IntoIter = Box<dyn ExactSizeIterator<Item = MarkerRef<'a>> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(name: &str, start: f64, data: Option<&'static str>) -> MarkerRef<'static> {
        let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
        MarkerRef {
            name,
            start_time: start,
            end_time: (start > 1.0).then_some(start + 1.0),
            category: (start > 2.0).then_some(3),
            data,
        }
    }

    fn columns(markers: &[MarkerRef]) -> Markers {
        let mut columns = Markers::default();
        for &marker in markers {
            columns.push(marker);
        }
        columns
    }

    #[test]
    fn markers_come_back_as_they_went_in() {
        let added = [
            marker("a", 3.0, Some(r#"{"type":"Text"}"#)),
            marker("b", 1.0, None),
            marker("a", 2.0, Some("[1]")),
        ];
        let markers = columns(&added);
        assert_eq!(markers.iter().collect::<Vec<_>>(), added);
        assert_eq!(markers.names().len(), 2);
    }

    #[test]
    fn kinds_taking_turns_keep_their_names_and_categories() {
        // More kinds than are tried before hashing, in turns, and one name in two
        // categories: each marker keeps its own.
        let names: Vec<String> = (0..RECENT_KINDS + 3)
            .map(|k| format!("track {k}"))
            .collect();
        let mut added = Vec::new();
        for tick in 0..5 {
            for (k, name) in names.iter().enumerate() {
                let mut sample = marker(name, (tick * 100 + k) as f64, None);
                sample.category = Some((k % 2) as u32);
                added.push(sample);
            }
            added.push(MarkerRef {
                category: Some(7),
                ..marker(&names[0], tick as f64, None)
            });
        }
        let markers = columns(&added);
        assert_eq!(markers.iter().collect::<Vec<_>>(), added);
        assert_eq!(markers.names().len(), names.len());
        assert_eq!(markers.kinds.len(), names.len() + 1);
    }

    #[test]
    fn sorting_is_stable_and_retain_keeps_the_order() {
        let mut markers = columns(&[
            marker("late", 5.0, Some("1")),
            marker("first", 0.0, None),
            marker("tie", 5.0, Some("2")),
            marker("middle", 2.5, Some("3")),
        ]);
        markers.sort_by_start();
        let names: Vec<&str> = markers.iter().map(|m| m.name).collect();
        assert_eq!(names, ["first", "middle", "late", "tie"]);
        markers.retain(|_, m| m.data != Some("1"));
        let data: Vec<_> = markers.iter().map(|m| m.data).collect();
        assert_eq!(data, [None, Some("3"), Some("2")]);
    }

    #[test]
    fn appended_and_retimed_columns_read_as_the_same_markers_pushed_one_by_one() {
        // Columns sorted (an order) and not, a kind in both and kinds of their own, a
        // repeated payload, and markers the new times leave out, first and in the middle.
        let ours = [marker("a", 2.0, Some("{}")), marker("b", 1.0, Some("[1]"))];
        let theirs = [
            marker("c", 0.5, Some("[2]")),
            marker("a", 3.0, Some("[2]")),
            marker("d", 2.5, Some("[3]")),
            marker("c", 4.0, Some("[3]")),
            marker("a", 5.0, None),
        ];
        let cases = [
            (false, false, true),
            (true, false, true),
            (false, true, true),
            (false, true, false),
            (true, true, false),
        ];
        for (sort_ours, sort_theirs, leave_out) in cases {
            let times = |start: f64, end: Option<f64>| {
                let left_out = leave_out && (start == 0.5 || start == 4.0);
                (!left_out).then_some((start + 10.0, end.map(|e| e + 10.0)))
            };
            let mut expected = columns(&ours);
            let mut appended = columns(&ours);
            let mut other = columns(&theirs);
            if sort_ours {
                expected.sort_by_start();
                appended.sort_by_start();
            }
            if sort_theirs {
                other.sort_by_start();
            }
            for marker in other.iter() {
                if let Some((start_time, end_time)) = times(marker.start_time, marker.end_time) {
                    expected.push(MarkerRef {
                        start_time,
                        end_time,
                        ..marker
                    });
                }
            }
            other.retime(times);
            appended.append(other);
            appended.push(marker("e", 0.0, Some("[3]")));
            expected.push(marker("e", 0.0, Some("[3]")));
            for markers in [&mut expected, &mut appended] {
                markers.sort_by_start();
            }
            assert_eq!(
                appended.iter().collect::<Vec<_>>(),
                expected.iter().collect::<Vec<_>>(),
                "{sort_ours} {sort_theirs} {leave_out}"
            );
            assert!(appended.payloads_hold("[2]") && !appended.payloads_hold("[4]"));
        }
    }

    #[test]
    fn a_payload_repeated_by_the_next_marker_is_held_once() {
        let markers = columns(&[
            marker("a", 0.0, Some("{}")),
            marker("b", 1.0, Some("{}")),
            marker("c", 2.0, None),
            marker("d", 3.0, Some("{}")),
            marker("e", 4.0, Some("[1]")),
        ]);
        assert_eq!(markers.arena.text(), "{}{}[1]");
        let payloads: Vec<usize> = (0..5)
            .map(|i| markers.brought_payload.count_through(i) - 1)
            .collect();
        assert_eq!(payloads, [0, 0, 1, 2, 3]);
        let data: Vec<_> = markers.iter().map(|m| m.data).collect();
        assert_eq!(
            data,
            [Some("{}"), Some("{}"), None, Some("{}"), Some("[1]")]
        );
    }

    #[test]
    fn walking_the_payloads_finds_what_a_rank_finds_in_any_order() {
        // Repeats, payloads and none, across a word of bits; then sorted, so that the
        // order jumps back and forth.
        let added: Vec<MarkerRef> = (0..150)
            .map(|i| {
                let data = ["{}", "[1]", "", "[1]"][i % 7 % 4];
                let start = ((i * 37) % 150) as f64;
                marker(&format!("m{}", i % 3), start, payload_or_none(data))
            })
            .collect();
        let mut markers = columns(&added);
        for sorted in [false, true] {
            if sorted {
                markers.sort_by_start();
            }
            let by_rank: Vec<MarkerRef> = (0..markers.len()).map(|p| markers.get(p)).collect();
            assert_eq!(markers.iter().collect::<Vec<_>>(), by_rank);
            let payloads: Vec<Option<&str>> = markers.payloads().collect();
            let data: Vec<Option<&str>> = by_rank.iter().map(|m| m.data).collect();
            assert_eq!(payloads, data);
        }
        assert_eq!(markers.iter().filter(|m| m.data.is_some()).count(), 107);
    }

    #[test]
    fn payloads_are_the_same_only_when_their_whole_texts_are() {
        let pairs = [
            ("", "", true),
            ("{}", "{}", true),
            (r#"{"text":"step 10"}"#, r#"{"text":"step 10"}"#, true),
            (r#"{"text":"step 10"}"#, r#"{"text":"step 11"}"#, false),
            (
                r#"{"a":1,"text":"same tail"}"#,
                r#"{"a":2,"text":"same tail"}"#,
                false,
            ),
            ("[1]", "[1,2]", false),
        ];
        for (a, b, same) in pairs {
            assert_eq!(same_payload(a, b), same, "{a} and {b}");
        }
    }

    #[test]
    fn bits_count_what_was_set_across_words() {
        let pattern = |i: usize| i.is_multiple_of(3) || i % 64 == 63 || (130..140).contains(&i);
        let mut bits = Bits::default();
        let mut counted = Vec::new();
        for i in 0..300 {
            bits.push(pattern(i));
            counted.push((0..=i).filter(|&j| pattern(j)).count());
        }
        let through: Vec<usize> = (0..300).map(|i| bits.count_through(i)).collect();
        assert_eq!(through, counted);
    }

    #[test]
    fn offsets_past_4_gib_keep_their_high_bits() {
        let mut offsets = Offsets::default();
        let offsets_in = [0, 7, 5 << 32, (5 << 32) + 3, (5 << 32) + 3, (6 << 32) + 1];
        for offset in offsets_in {
            offsets.push(offset as usize);
        }
        let offsets_out: Vec<u64> = (0..6).map(|i| offsets.get(i) as u64).collect();
        assert_eq!(offsets_out, offsets_in);
    }

    #[test]
    fn a_marker_added_after_sorting_is_last_until_sorted_again() {
        let mut markers = columns(&[marker("b", 2.0, None), marker("a", 1.0, None)]);
        markers.sort_by_start();
        markers.push(marker("c", 0.5, Some("{}")));
        let names = |markers: &Markers| {
            let names: Vec<String> = markers.iter().map(|m| m.name.to_owned()).collect();
            names
        };
        assert_eq!(names(&markers), ["a", "b", "c"]);
        markers.sort_by_start();
        assert_eq!(names(&markers), ["c", "a", "b"]);
        assert_eq!(markers.get(0).data, Some("{}"));
    }
}
