//! racepred's compact binary trace format (stub: filled in by the formats work).

use std::io::BufRead;

use super::{Event, EventSource, Names};
use crate::error::{Error, Position, Result};

/// Magic bytes at the start of a binary trace.
pub const MAGIC: &[u8] = b"RACEPRED";

pub struct BinaryReader<R> {
    _rdr: R,
    names: Names,
}

impl<R: BufRead> BinaryReader<R> {
    pub fn from_buf_read(rdr: R) -> Result<Self> {
        Ok(BinaryReader {
            _rdr: rdr,
            names: Names::new(),
        })
    }
}

impl<R: BufRead> EventSource for BinaryReader<R> {
    fn next_event(&mut self) -> Result<Option<Event>> {
        Err(Error::invalid("binary reader not implemented yet"))
    }
    fn names(&self) -> &Names {
        &self.names
    }
    fn position(&self) -> Position {
        Position::default()
    }
}
