//! What every trace writer is: the [`TraceWriter`] trait, [`copy`] from any event source,
//! and the name lookup the text writers share ([`checked_name`]). The writers themselves
//! are in `write.rs` (STD, binary, files) and `write_formats.rs` (RoadRunner, CSV, Go-tool
//! log); both build on this module and neither on the other's internals.

use super::{AddrId, Event, EventSource, NameKind, Names, Op};
use crate::error::{Error, ErrorKind, Result};

/// What an event carries beside itself: the address set of an `mbegin` (empty otherwise)
/// and its global access number, if any.
#[derive(Clone, Copy, Default, Debug)]
pub struct Extras<'a> {
    pub addresses: &'a [AddrId],
    pub seq: Option<u64>,
}

impl<'a> Extras<'a> {
    /// What `src` says beside `ev`, the event it just gave.
    pub fn of(src: &'a dyn EventSource, ev: &Event) -> Extras<'a> {
        Extras {
            addresses: match ev.op {
                Op::MethodBegin => src.addresses(),
                _ => &[],
            },
            seq: src.seq(),
        }
    }
}

/// A sink for events.
pub trait TraceWriter {
    /// Appends one event; `names` are the source's name tables.
    fn write_event(&mut self, ev: &Event, names: &Names, extras: Extras<'_>) -> Result<()>;

    /// Appends events without side data (no `mbegin` address set, no access number): what
    /// `write_event` does for each, in one call (a writer may do it faster).
    fn write_events(&mut self, evs: &[Event], names: &Names) -> Result<()> {
        evs.iter()
            .try_for_each(|ev| self.write_event(ev, names, Extras::default()))
    }

    /// Appends the values of a value trace ([`super::values::ValueTrace::values_record`])
    /// after the events written so far. Only the binary format holds them this way (STD
    /// writes them inline); the default is an error.
    fn write_values(&mut self, text: &str) -> Result<()> {
        let _ = text;
        Err(Error::invalid("this output format cannot hold values"))
    }

    /// Flushes and finalises the output (end record, compression trailer). Required: a
    /// writer dropped without `finish` may leave an incomplete file.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// Copies every event of `src` into `dst` (without finishing `dst`); returns the count.
pub fn copy(src: &mut dyn EventSource, dst: &mut dyn TraceWriter) -> Result<u64> {
    let mut n = 0u64;
    while let Some(ev) = src.next_event()? {
        dst.write_event(&ev, src.names(), Extras::of(src, &ev))
            .map_err(|e| match e.kind() {
                // A name the output cannot hold: say which input event has it.
                ErrorKind::Invalid(_) => e.at(src.position()),
                _ => e,
            })?;
        n += 1;
    }
    Ok(n)
}

/// The name of `id` in table `kind`, checked once per name by `check` (`checked` remembers
/// which names passed): the name lookup of every text writer.
pub(crate) fn checked_name<'n>(
    checked: &mut [Vec<bool>; 7],
    names: &'n Names,
    kind: NameKind,
    id: u32,
    check: impl FnOnce(&str) -> Result<()>,
) -> Result<&'n str> {
    let table = names.table(kind);
    if (id as usize) >= table.len() {
        return Err(Error::invalid(format!(
            "event refers to {kind:?} id {id}, but the source has only {} such names",
            table.len()
        )));
    }
    let name = table.name(id);
    let c = &mut checked[kind as usize];
    if c.get(id as usize) != Some(&true) {
        check(name)?;
        if c.len() <= id as usize {
            c.resize(id as usize + 1, false);
        }
        c[id as usize] = true;
    }
    Ok(name)
}
